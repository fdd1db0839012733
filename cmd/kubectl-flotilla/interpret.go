package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/customization/builtin"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// interpretOp is one operation as the interpret command names it: Karmada's name for it
// (karmadactl interpret --operation), the function its script defines, and the
// customization's field.
type interpretOp struct {
	op       interpreter.Operation
	karmada  string
	function string
}

// interpretOps are the operations in the order interpret runs them.
var interpretOps = []interpretOp{
	{interpreter.OperationGetReplicas, "InterpretReplica", "GetReplicas"},
	{interpreter.OperationGetComponents, "InterpretComponent", "GetComponents"},
	{interpreter.OperationReviseReplica, "ReviseReplica", "ReviseReplica"},
	{interpreter.OperationRetain, "Retain", "Retain"},
	{interpreter.OperationReflectStatus, "InterpretStatus", "ReflectStatus"},
	{interpreter.OperationInterpretHealth, "InterpretHealth", "InterpretHealth"},
	{interpreter.OperationInterpretDependency, "InterpretDependency", "GetDependencies"},
	{interpreter.OperationAggregateStatus, "AggregateStatus", "AggregateStatus"},
}

// parseOperation finds an operation by Karmada's name, its function's name or its field's
// name, in any case: InterpretReplica, GetReplicas and replicaResource are the same.
func parseOperation(name string) (interpretOp, error) {
	for _, o := range interpretOps {
		for _, n := range []string{o.karmada, o.function, string(o.op)} {
			if strings.EqualFold(name, n) {
				return o, nil
			}
		}
	}
	var names []string
	for _, o := range interpretOps {
		names = append(names, o.karmada)
	}
	return interpretOp{}, fmt.Errorf("unknown operation %q: use one of %s (or the function's name: GetReplicas, ...)", name, strings.Join(names, ", "))
}

type interpretFlags struct {
	files          []string
	operation      string
	desired        string
	observed       string
	status         string
	desiredReplica int64
	check          bool
	builtin        bool
	output         string
}

func newInterpretCommand(host *hostFlags) *cobra.Command {
	o := &interpretFlags{}
	cmd := &cobra.Command{
		Use:   "interpret [-f CUSTOMIZATION.yaml] (--check | [--operation OPERATION] [--desired-file F] [--observed-file F] [--status-file F] [--desired-replica N])",
		Short: "Check ResourceInterpreterCustomizations and run their scripts on objects, locally",
		Long: `interpret runs the Lua scripts of ResourceInterpreterCustomizations on objects from files,
locally, with the engine and sandbox the manager uses, and prints the results as YAML: what
karmadactl interpret does for script authors.

The customizations come from -f (files of one or more YAML documents, or a List; - is stdin),
from Flotilla's built-in interpreters (--builtin), or otherwise from the host cluster
(--kubeconfig, --context). The one that applies is the
one whose target is the object's apiVersion and kind; when several script an operation, the
first by name serves it, as in the manager.

--check compiles every script of every customization and checks that it defines its function;
errors name the customization, the operation and the line. It exits non-zero on any error.

Otherwise interpret runs one operation (--operation) or every operation the customization
scripts (without it), each on the inputs it takes:

  InterpretReplica (GetReplicas)        --desired-file (or --observed-file)
  InterpretComponent (GetComponents)    --desired-file (or --observed-file)
  ReviseReplica (ReviseReplica)         --desired-file (or --observed-file) and --desired-replica
  Retain (Retain)                       --desired-file and --observed-file
  InterpretStatus (ReflectStatus)       --observed-file (or --desired-file)
  InterpretHealth (InterpretHealth)     --observed-file (or --desired-file)
  InterpretDependency (GetDependencies) --desired-file (or --observed-file)
  AggregateStatus (AggregateStatus)     --desired-file (or --observed-file) and --status-file

--operation takes Karmada's name, the function's or the customization's field (replicaResource),
in any case. --desired, --observed and --status are short for the -file flags. The status file
holds the members' items as a YAML list or as YAML documents of {clusterName, status, applied,
health}; without it AggregateStatus gets nil, as when no member has reported. Running every
operation skips those whose inputs are missing and says so. A script that fails is reported
with the customization, the operation and the line, and the command exits non-zero.`,
		Example: `  # Check the scripts of a customization before applying it
  kubectl flotilla interpret -f customization.yaml --check

  # Check the customizations in the host cluster
  kubectl flotilla interpret --check

  # What the replicaResource script says of a Deployment
  kubectl flotilla interpret -f customization.yaml --operation InterpretReplica --desired-file deploy.yaml

  # Retain the member's values into the desired object
  kubectl flotilla interpret -f customization.yaml --operation Retain --desired-file desired.yaml --observed-file observed.yaml

  # Aggregate two members' statuses
  kubectl flotilla interpret -f customization.yaml --operation AggregateStatus --desired-file desired.yaml --status-file status.yaml

  # Every scripted operation, with the host's customizations
  kubectl flotilla interpret --desired deploy.yaml --observed observed.yaml --desired-replica 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInterpret(cmd, host, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "Files of ResourceInterpreterCustomizations (- for stdin); default: those in the host cluster")
	f.BoolVar(&o.builtin, "builtin", false, "Use Flotilla's built-in interpreters of third-party kinds (docs/builtin-interpreters.md) instead of -f or the host's")
	f.StringVar(&o.operation, "operation", "", "The operation to run (InterpretReplica, InterpretComponent, ReviseReplica, Retain, InterpretStatus, InterpretHealth, InterpretDependency, AggregateStatus); default: every scripted one")
	f.StringVar(&o.desired, "desired-file", "", "File of the desired object, the template (- for stdin)")
	f.StringVar(&o.observed, "observed-file", "", "File of the observed object, as in a member (- for stdin)")
	f.StringVar(&o.status, "status-file", "", "File of the members' status items, for AggregateStatus (- for stdin)")
	f.Int64Var(&o.desiredReplica, "desired-replica", 0, "The replicas to give ReviseReplica")
	f.BoolVar(&o.check, "check", false, "Compile every script and check that it defines its function, then exit")
	f.StringVarP(&o.output, "output", "o", "yaml", "Output format: yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("operation", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, o := range interpretOps {
			names = append(names, o.karmada+"\t"+o.function)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name {
		case "desired", "observed", "status":
			return pflag.NormalizedName(name + "-file")
		}
		return pflag.NormalizedName(name)
	})
	return cmd
}

func runInterpret(cmd *cobra.Command, host *hostFlags, o *interpretFlags) error {
	if o.output != "yaml" && o.output != "json" {
		return fmt.Errorf("unknown output format %q: use -o yaml or json", o.output)
	}
	if o.check && (o.operation != "" || o.desired != "" || o.observed != "" || o.status != "") {
		return errors.New("--check takes only the customizations (-f); it runs no operation")
	}
	stdin := 0
	for _, path := range append([]string{o.desired, o.observed, o.status}, o.files...) {
		if path == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("only one file can be - (stdin)")
	}
	read := func(path string) ([]byte, error) {
		if path == "-" {
			return io.ReadAll(cmd.InOrStdin())
		}
		return os.ReadFile(path)
	}

	var rics []configv1alpha1.ResourceInterpreterCustomization
	source := "the host cluster"
	if o.builtin && len(o.files) > 0 {
		return errors.New("--builtin and -f both name the customizations: give one")
	}
	if o.builtin {
		source = "the built-in interpreters"
		list, err := builtin.Customizations()
		if err != nil {
			return err
		}
		for _, ric := range list {
			rics = append(rics, *ric)
		}
	} else if len(o.files) > 0 {
		source = strings.Join(o.files, ", ")
		for _, path := range o.files {
			data, err := read(path)
			if err != nil {
				return err
			}
			list, err := decodeCustomizations(data)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			rics = append(rics, list...)
		}
	} else {
		cfg, err := host.config()
		if err != nil {
			return err
		}
		c, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
		if err != nil {
			return err
		}
		var list configv1alpha1.ResourceInterpreterCustomizationList
		if err := c.List(cmd.Context(), &list); err != nil {
			return fmt.Errorf("listing the host's ResourceInterpreterCustomizations: %w", err)
		}
		rics = list.Items
	}
	if len(rics) == 0 {
		return fmt.Errorf("no ResourceInterpreterCustomization in %s", source)
	}

	if o.check {
		report, failed := checkCustomizations(rics)
		fmt.Fprint(cmd.OutOrStdout(), report)
		if failed > 0 {
			return fmt.Errorf("%d of %d customizations failed the check", failed, len(rics))
		}
		return nil
	}

	in := interpretInputs{replicas: o.desiredReplica, hasReplicas: cmd.Flags().Changed("desired-replica")}
	var err error
	if in.desired, err = readObject(read, o.desired, "--desired-file"); err != nil {
		return err
	}
	if in.observed, err = readObject(read, o.observed, "--observed-file"); err != nil {
		return err
	}
	if o.status != "" {
		data, err := read(o.status)
		if err != nil {
			return err
		}
		if in.items, err = decodeStatusItems(data); err != nil {
			return fmt.Errorf("--status-file %s: %w", o.status, err)
		}
	}
	if in.desired == nil && in.observed == nil {
		return errors.New("give the object to interpret: --desired-file or --observed-file (or --check)")
	}

	store := customization.NewStore(customization.Options{})
	for i := range rics {
		if err := store.Apply(&rics[i]); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (left out)\n", err)
		}
	}
	gvk := in.object().GroupVersionKind()
	c, ok := store.Lookup(gvk)
	if !ok {
		return fmt.Errorf("no customization in %s targets %s %s", source, gvk.GroupVersion(), gvk.Kind)
	}

	ops := interpretOps
	if o.operation != "" {
		op, err := parseOperation(o.operation)
		if err != nil {
			return err
		}
		ops = []interpretOp{op}
	}
	results := interpretAll(store, c, gvk, ops, in)
	if o.operation != "" {
		r := results[0]
		switch {
		case r.Error != "":
			return errors.New(r.Error)
		case r.Skipped != "":
			return fmt.Errorf("%s: %s", r.Operation, r.Skipped)
		}
		if err := printInterpreted(cmd.OutOrStdout(), o.output, r.Result); err != nil {
			return err
		}
		return nil
	}
	if err := printResults(cmd.OutOrStdout(), o.output, results); err != nil {
		return err
	}
	var failed []string
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, r.Operation)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed (see above)", strings.Join(failed, ", "))
	}
	return nil
}

// printResults prints every operation's result: in YAML, one document each under a comment
// naming the operation, its function and the customization that served it (an error or a
// skip as a comment instead); in JSON, a list of {operation, function, customization,
// result, error, skipped}.
func printResults(w io.Writer, format string, results []interpretResult) error {
	if format == "json" {
		return printInterpreted(w, format, results)
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		fmt.Fprintf(w, "# %s (%s)", r.Operation, r.Function)
		if r.Customization != "" {
			fmt.Fprintf(w, ", customization %q", r.Customization)
		}
		fmt.Fprintln(w)
		switch {
		case r.Error != "":
			fmt.Fprintf(w, "# error: %s\n", strings.ReplaceAll(r.Error, "\n", "\n# "))
		case r.Skipped != "":
			fmt.Fprintf(w, "# skipped: %s\n", r.Skipped)
		default:
			if err := printInterpreted(w, format, r.Result); err != nil {
				return err
			}
		}
	}
	return nil
}

func printInterpreted(w io.Writer, format string, x any) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(x)
	}
	data, err := yaml.Marshal(x)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// readObject reads and decodes one object file; nil when path is empty.
func readObject(read func(string) ([]byte, error), path, flag string) (*unstructured.Unstructured, error) {
	if path == "" {
		return nil, nil
	}
	data, err := read(path)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return obj, nil
}

// yamlDocuments splits YAML (or JSON) into its documents, skipping empty ones.
func yamlDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
}

// decodeCustomizations decodes ResourceInterpreterCustomizations from YAML documents, each
// one customization or a List of them. Unknown fields are errors.
func decodeCustomizations(data []byte) ([]configv1alpha1.ResourceInterpreterCustomization, error) {
	docs, err := yamlDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []configv1alpha1.ResourceInterpreterCustomization
	for n, doc := range docs {
		var meta struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		var generic any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			return nil, fmt.Errorf("document %d: %w", n+1, err)
		}
		if generic == nil {
			continue // only comments
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", n+1, err)
		}
		items := [][]byte{doc}
		if meta.Kind == "List" || strings.HasSuffix(meta.Kind, "List") && meta.Items != nil {
			items = items[:0]
			for _, it := range meta.Items {
				items = append(items, it)
			}
		}
		for i, item := range items {
			where := fmt.Sprintf("document %d", n+1)
			if len(items) > 1 || meta.Kind == "List" {
				where += fmt.Sprintf(", item %d", i+1)
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(item, &tm); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if tm.Kind != "ResourceInterpreterCustomization" || tm.APIVersion != configv1alpha1.GroupVersion.String() {
				return nil, fmt.Errorf("%s is a %s %s, not a %s ResourceInterpreterCustomization", where, tm.APIVersion, tm.Kind, configv1alpha1.GroupVersion)
			}
			var ric configv1alpha1.ResourceInterpreterCustomization
			if err := yaml.UnmarshalStrict(item, &ric); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if ric.Name == "" {
				return nil, fmt.Errorf("%s: the customization has no name", where)
			}
			out = append(out, ric)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no ResourceInterpreterCustomization in it")
	}
	return out, nil
}

// decodeObject decodes the one object of a YAML or JSON file.
func decodeObject(data []byte) (*unstructured.Unstructured, error) {
	docs, err := yamlDocuments(data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("want one object, found %d documents", len(docs))
	}
	var m map[string]any
	if err := yaml.Unmarshal(docs[0], &m); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: normalizeNumbers(m).(map[string]any)}
	if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
		return nil, errors.New("the object has no apiVersion or kind")
	}
	if _, err := schema.ParseGroupVersion(obj.GetAPIVersion()); err != nil {
		return nil, err
	}
	return obj, nil
}

// normalizeNumbers turns whole float64 numbers into int64, as the API server's objects hold
// them (YAML decodes every number as float64).
func normalizeNumbers(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			t[k] = normalizeNumbers(v)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = normalizeNumbers(v)
		}
		return t
	case float64:
		if t == float64(int64(t)) && t >= -(1<<53) && t <= 1<<53 {
			return int64(t)
		}
	}
	return x
}

// decodeStatusItems decodes the members' status items: a YAML list of items, or one item
// per YAML document (as karmadactl's status files are).
func decodeStatusItems(data []byte) ([]workv1alpha2.AggregatedStatusItem, error) {
	docs, err := yamlDocuments(data)
	if err != nil {
		return nil, err
	}
	var items []workv1alpha2.AggregatedStatusItem
	for n, doc := range docs {
		trimmed := bytes.TrimSpace(doc)
		if bytes.HasPrefix(trimmed, []byte("-")) || bytes.HasPrefix(trimmed, []byte("[")) {
			var list []workv1alpha2.AggregatedStatusItem
			if err := yaml.UnmarshalStrict(doc, &list); err != nil {
				return nil, fmt.Errorf("document %d: %w", n+1, err)
			}
			items = append(items, list...)
			continue
		}
		var item workv1alpha2.AggregatedStatusItem
		if err := yaml.UnmarshalStrict(doc, &item); err != nil {
			return nil, fmt.Errorf("document %d: %w", n+1, err)
		}
		items = append(items, item)
	}
	for i, it := range items {
		if it.ClusterName == "" {
			return nil, fmt.Errorf("item %d has no clusterName", i+1)
		}
		if it.Status != nil && len(it.Status.Raw) > 0 {
			var m map[string]any
			if err := json.Unmarshal(it.Status.Raw, &m); err != nil || m == nil {
				return nil, fmt.Errorf("item %d (%s): the status is not an object", i+1, it.ClusterName)
			}
		}
	}
	return items, nil
}

// checkCustomizations compiles every customization and reports, one line each, what it
// scripts or why it fails, and warnings: two customizations scripting the same operation of a
// kind (the first by name serves it), replicaResource beside componentResource.
func checkCustomizations(rics []configv1alpha1.ResourceInterpreterCustomization) (report string, failed int) {
	var b strings.Builder
	sorted := slices.Clone(rics)
	slices.SortStableFunc(sorted, func(a, b configv1alpha1.ResourceInterpreterCustomization) int {
		return strings.Compare(a.Name, b.Name)
	})
	servedBy := map[string]string{}
	for _, ric := range sorted {
		target := ric.Spec.Target.APIVersion + " " + ric.Spec.Target.Kind
		fmt.Fprintf(&b, "customization %q (%s): ", ric.Name, target)
		if err := customization.Compile(ric.Spec); err != nil {
			failed++
			lines := strings.Split(err.Error(), "\n")
			if len(lines) == 1 {
				fmt.Fprintf(&b, "error: %s\n", lines[0])
				continue
			}
			b.WriteString("errors:\n")
			for _, l := range lines {
				fmt.Fprintf(&b, "  %s\n", l)
			}
			continue
		}
		var scripted []string
		var warnings []string
		has := map[interpreter.Operation]bool{}
		for _, o := range interpretOps {
			if !scripts(ric.Spec.Customizations, o.op) {
				continue
			}
			has[o.op] = true
			scripted = append(scripted, fmt.Sprintf("%s (%s)", o.op, o.function))
			key := target + "\x00" + string(o.op)
			if first, ok := servedBy[key]; ok {
				warnings = append(warnings, fmt.Sprintf("%s is also scripted by %q, which serves it (the first by name)", o.op, first))
			} else {
				servedBy[key] = ric.Name
			}
		}
		if has[interpreter.OperationGetReplicas] && has[interpreter.OperationGetComponents] {
			warnings = append(warnings, "replicaResource and componentResource are both set; Karmada documents them as mutually exclusive")
		}
		fmt.Fprintf(&b, "OK: %s\n", strings.Join(scripted, ", "))
		for _, w := range warnings {
			fmt.Fprintf(&b, "  warning: %s\n", w)
		}
	}
	return b.String(), failed
}

// scripts reports whether rules set op's script.
func scripts(r configv1alpha1.CustomizationRules, op interpreter.Operation) bool {
	switch op {
	case interpreter.OperationRetain:
		return r.Retention != nil
	case interpreter.OperationGetReplicas:
		return r.ReplicaResource != nil
	case interpreter.OperationGetComponents:
		return r.ComponentResource != nil
	case interpreter.OperationReviseReplica:
		return r.ReplicaRevision != nil
	case interpreter.OperationReflectStatus:
		return r.StatusReflection != nil
	case interpreter.OperationAggregateStatus:
		return r.StatusAggregation != nil
	case interpreter.OperationInterpretHealth:
		return r.HealthInterpretation != nil
	case interpreter.OperationInterpretDependency:
		return r.DependencyInterpretation != nil
	}
	return false
}

// interpretInputs are the objects the operations run on.
type interpretInputs struct {
	desired, observed *unstructured.Unstructured
	items             []workv1alpha2.AggregatedStatusItem
	replicas          int64
	hasReplicas       bool
}

// object is the object that decides the kind: the desired one, else the observed one.
func (in interpretInputs) object() *unstructured.Unstructured {
	if in.desired != nil {
		return in.desired
	}
	return in.observed
}

// template is the object the template's operations run on: desired, else observed.
func (in interpretInputs) template() *unstructured.Unstructured { return in.object() }

// member is the object the member's operations run on: observed, else desired.
func (in interpretInputs) member() *unstructured.Unstructured {
	if in.observed != nil {
		return in.observed
	}
	return in.desired
}

// interpretResult is what one operation gave.
type interpretResult struct {
	Operation     string `json:"operation"`
	Function      string `json:"function"`
	Customization string `json:"customization,omitempty"`
	Result        any    `json:"result,omitempty"`
	Error         string `json:"error,omitempty"`
	Skipped       string `json:"skipped,omitempty"`
}

// interpretAll runs ops with c, the customization of gvk in store; an operation c does not
// script, or whose inputs are missing, is skipped (when running every operation, one c does
// not script is left out).
func interpretAll(store *customization.Store, c interpreter.Customization, gvk schema.GroupVersionKind, ops []interpretOp, in interpretInputs) []interpretResult {
	var results []interpretResult
	for _, o := range ops {
		r := interpretResult{Operation: o.karmada, Function: o.function}
		if !c.Has(o.op) {
			if len(ops) > 1 {
				continue
			}
			r.Skipped = fmt.Sprintf("no customization of %s %s scripts %s (%s)", gvk.GroupVersion(), gvk.Kind, o.op, o.function)
			results = append(results, r)
			continue
		}
		r.Customization = store.Serving(gvk, o.op)
		result, skipped, err := interpretOne(c, o.op, in)
		switch {
		case err != nil:
			r.Error = err.Error()
		case skipped != "":
			r.Skipped = skipped
		default:
			r.Result = result
		}
		results = append(results, r)
	}
	return results
}

// interpretOne runs one operation; skipped says which input it lacks.
func interpretOne(c interpreter.Customization, op interpreter.Operation, in interpretInputs) (result any, skipped string, err error) {
	switch op {
	case interpreter.OperationGetReplicas:
		n, req, err := c.GetReplicas(in.template())
		if err != nil {
			return nil, "", err
		}
		out := map[string]any{"replicas": n}
		if req != nil {
			out["replicaRequirements"] = req
		}
		return out, "", nil
	case interpreter.OperationGetComponents:
		components, err := c.GetComponents(in.template())
		if components == nil && err == nil {
			components = []workv1alpha2.Component{}
		}
		return components, "", err
	case interpreter.OperationReviseReplica:
		if !in.hasReplicas {
			return nil, "needs --desired-replica", nil
		}
		out, err := c.ReviseReplica(in.template().DeepCopy(), in.replicas)
		if err != nil {
			return nil, "", err
		}
		return out.Object, "", nil
	case interpreter.OperationRetain:
		if in.desired == nil || in.observed == nil {
			return nil, "needs --desired-file and --observed-file", nil
		}
		out, err := c.Retain(in.desired.DeepCopy(), in.observed.DeepCopy())
		if err != nil {
			return nil, "", err
		}
		return out.Object, "", nil
	case interpreter.OperationReflectStatus:
		st, err := c.ReflectStatus(in.member())
		if err != nil || st == nil {
			return map[string]any{"status": nil}, "", err
		}
		var m map[string]any
		if err := json.Unmarshal(st.Raw, &m); err != nil {
			return nil, "", err
		}
		return map[string]any{"status": m}, "", nil
	case interpreter.OperationInterpretHealth:
		healthy, err := c.InterpretHealth(in.member())
		return map[string]any{"healthy": healthy}, "", err
	case interpreter.OperationInterpretDependency:
		deps, err := c.GetDependencies(in.template())
		if deps == nil && err == nil {
			deps = []configv1alpha1.DependentObjectReference{}
		}
		return deps, "", err
	case interpreter.OperationAggregateStatus:
		status, err := c.AggregateStatus(in.template().DeepCopy(), in.items)
		return map[string]any{"status": status}, "", err
	}
	return nil, "", fmt.Errorf("unknown operation %s", op)
}
