package fleetview

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/member"
)

// DefaultMemberTimeout bounds each member's answer to `get`.
const DefaultMemberTimeout = 5 * time.Second

// ClusterAnnotation marks, in `get -o json|yaml`, the member each object was read from.
const ClusterAnnotation = wellknown.JoinedClusterLabel

// tableAccept asks for the server-side Table, as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// GetRequest says what to read from which members.
type GetRequest struct {
	// Resource as users type it: deploy, deployments.apps, Deployment.
	Resource string
	// Name is one object; empty lists.
	Name string
	// Namespace of namespaced resources, unless AllNamespaces.
	Namespace     string
	AllNamespaces bool
	// Selector is a label selector for lists.
	Selector string
	// Clusters to read; empty means every Ready Cluster.
	Clusters []string
	// MemberTimeout bounds each member's answer; default DefaultMemberTimeout.
	MemberTimeout time.Duration
	// Objects asks for the objects themselves (-o json|yaml) instead of Tables.
	Objects bool
}

// MemberResult is one member's answer.
type MemberResult struct {
	Cluster string
	// Table is the member's server-side Table (without Objects).
	Table *metav1.Table
	// Items are the objects (with Objects).
	Items []unstructured.Unstructured
	Err   error
}

// GetResult is the members' answers, in cluster name order.
type GetResult struct {
	Mapping       *meta.RESTMapping
	AllNamespaces bool
	Members       []MemberResult
}

// Failed counts the members that answered with an error.
func (r *GetResult) Failed() int {
	return failed(r.Members, func(m MemberResult) error { return m.Err })
}

// failed counts the members whose answer was an error. A Pull member, which the host cannot
// read by design, is reported but does not count.
func failed[M any](members []M, errOf func(M) error) int {
	n := 0
	for _, m := range members {
		if err := errOf(m); err != nil && !errors.Is(err, ErrPullMember) {
			n++
		}
	}
	return n
}

// Empty reports whether no member returned an object.
func (r *GetResult) Empty() bool {
	for _, m := range r.Members {
		if len(m.Items) > 0 || (m.Table != nil && len(m.Table.Rows) > 0) {
			return false
		}
	}
	return true
}

// Get reads the resource from the members in parallel, through the member credentials the
// host holds (each Cluster's apiEndpoint and the Secret its secretRef names). A member that
// fails or does not answer within the timeout gets an error in its result; the others are
// not held up.
func (h *Host) Get(ctx context.Context, req GetRequest) (*GetResult, error) {
	mapping, err := h.Resolve(req.Resource)
	if err != nil {
		return nil, err
	}
	clusters, err := h.selectClusters(ctx, req.Clusters)
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(req.MemberTimeout, DefaultMemberTimeout)
	res := &GetResult{Mapping: mapping, AllNamespaces: req.AllNamespaces && req.Name == "", Members: make([]MemberResult, len(clusters))}
	fanOut(ctx, clusters, timeout, func(i int, name string, err error) { res.Members[i].Cluster, res.Members[i].Err = name, err },
		func(ctx context.Context, i int, c *clusterv1alpha1.Cluster, expired func() bool) {
			r := &res.Members[i]
			h.readMember(ctx, r, c, mapping, req)
			if r.Err != nil && expired() {
				r.Err = fmt.Errorf("no answer within %s", timeout)
			}
		})
	return res, nil
}

// fanOut reads the selected clusters in parallel, each within timeout: set records each
// cluster's name and selection error, and read runs for each selected cluster (expired tells
// whether its time ran out). It returns when every read has.
func fanOut(ctx context.Context, clusters []selected, timeout time.Duration, set func(i int, name string, err error),
	read func(ctx context.Context, i int, c *clusterv1alpha1.Cluster, expired func() bool)) {
	var wg sync.WaitGroup
	for i, c := range clusters {
		set(i, c.name, c.err)
		if c.err != nil {
			continue
		}
		wg.Go(func() {
			mctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			read(mctx, i, c.cluster, func() bool { return errors.Is(mctx.Err(), context.DeadlineExceeded) })
		})
	}
	wg.Wait()
}

type selected struct {
	name    string
	cluster *clusterv1alpha1.Cluster
	err     error
}

// selectClusters returns the named Clusters (an unknown name gets an error), or every Ready
// Cluster, sorted by name.
func (h *Host) selectClusters(ctx context.Context, names []string) ([]selected, error) {
	list := &clusterv1alpha1.ClusterList{}
	if err := h.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list clusters in the host at %s: %w", h.Config.Host, err)
	}
	var out []selected
	if len(names) == 0 {
		for i := range list.Items {
			c := &list.Items[i]
			if meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady) {
				out = append(out, selected{name: c.Name, cluster: c})
			}
		}
	} else {
		for _, n := range names {
			s := selected{name: n, err: fmt.Errorf("no Cluster named %q in the host", n)}
			for i := range list.Items {
				if list.Items[i].Name == n {
					s = selected{name: n, cluster: &list.Items[i]}
				}
			}
			if !slices.ContainsFunc(out, func(o selected) bool { return o.name == n }) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b selected) int { return cmp.Compare(a.name, b.name) })
	return out, nil
}

// ErrPullMember is returned for a Pull member, which the host cannot read.
var ErrPullMember = errors.New("not readable from the host")

// MemberConfig builds the REST config of a member from its Cluster and the Secret its
// secretRef names in the host.
func (h *Host) MemberConfig(ctx context.Context, c *clusterv1alpha1.Cluster) (*rest.Config, error) {
	if c.Spec.SyncMode == clusterv1alpha1.Pull {
		return nil, fmt.Errorf("%w: %s is a Pull member; the host has no credentials for it (its Works and status are in the host: kubectl flotilla status; read the member itself with its own kubeconfig)",
			ErrPullMember, c.Name)
	}
	var secret *corev1.Secret
	if ref := c.Spec.SecretRef; ref != nil {
		secret = &corev1.Secret{}
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("read the credentials of cluster %s: %w", c.Name, err)
		}
	}
	cfg, err := member.RESTConfig(c, secret)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubectl-flotilla"
	return cfg, nil
}

func (h *Host) readMember(ctx context.Context, r *MemberResult, c *clusterv1alpha1.Cluster, mapping *meta.RESTMapping, req GetRequest) {
	cfg, err := h.MemberConfig(ctx, c)
	if err != nil {
		r.Err = err
		return
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		r.Err = err
		return
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		r.Err = err
		return
	}
	gvr := mapping.Resource
	parts := []string{"/api", gvr.Version}
	if gvr.Group != "" {
		parts = []string{"/apis", gvr.Group, gvr.Version}
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && !(req.AllNamespaces && req.Name == "") {
		parts = append(parts, "namespaces", cmp.Or(req.Namespace, metav1.NamespaceDefault))
	}
	parts = append(parts, gvr.Resource)
	if req.Name != "" {
		parts = append(parts, req.Name)
	}
	u.Path = path.Join(append([]string{u.Path}, parts...)...)
	if req.Selector != "" && req.Name == "" {
		u.RawQuery = url.Values{"labelSelector": {req.Selector}}.Encode()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		r.Err = err
		return
	}
	hreq.Header.Set("Accept", tableAccept)
	if req.Objects {
		hreq.Header.Set("Accept", "application/json")
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		r.Err = err
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.Err = err
		return
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			r.Err = errors.New(st.Message)
		} else {
			r.Err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return
	}
	if req.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(body); err != nil {
			r.Err = err
			return
		}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				r.Err = err
				return
			}
			r.Items = l.Items
			for i := range r.Items {
				// The items of a list do not carry their kind.
				r.Items[i].SetGroupVersionKind(mapping.GroupVersionKind)
			}
		} else {
			r.Items = []unstructured.Unstructured{*u}
		}
		return
	}
	t := &metav1.Table{}
	if err := json.Unmarshal(body, t); err != nil || t.Kind != "Table" {
		r.Err = fmt.Errorf("the member did not answer with a Table")
		return
	}
	r.Table = t
}

// PrintGet writes the members' Tables as one table with a CLUSTER column first (and
// NAMESPACE with all namespaces); a member that failed gets one row with its error. Format
// is "" (the columns of priority 0), "wide" (all columns), "json" or "yaml" (a List whose
// items are annotated with their cluster).
func PrintGet(w io.Writer, r *GetResult, format string) error {
	switch format {
	case "json", "yaml":
		return printObjects(w, r, format)
	case "", "wide":
	default:
		return fmt.Errorf("unknown output format %q: use wide, json or yaml", format)
	}
	var columns []string
	for _, m := range r.Members {
		if m.Table == nil {
			continue
		}
		for _, c := range m.Table.ColumnDefinitions {
			if (c.Priority == 0 || format == "wide") && !slices.Contains(columns, c.Name) {
				columns = append(columns, c.Name)
			}
		}
	}
	if len(columns) == 0 {
		columns = []string{"Name"}
	}
	header := []string{"CLUSTER"}
	if r.AllNamespaces {
		header = append(header, "NAMESPACE")
	}
	for _, c := range columns {
		header = append(header, strings.ToUpper(c))
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	// The members' rows first, their errors after them: an error row has one long cell, and
	// tabwriter aligns a column only over consecutive lines that have it, so an error row
	// between two members' rows would misalign the rows after it.
	for _, m := range r.Members {
		if m.Err != nil || m.Table == nil {
			continue
		}
		index := map[string]int{}
		for i, c := range m.Table.ColumnDefinitions {
			index[c.Name] = i
		}
		for _, row := range m.Table.Rows {
			cells := []string{m.Cluster}
			if r.AllNamespaces {
				cells = append(cells, cmp.Or(rowNamespace(row), none))
			}
			for _, c := range columns {
				i, ok := index[c]
				if !ok || i >= len(row.Cells) {
					cells = append(cells, "<none>")
					continue
				}
				cells = append(cells, formatCell(row.Cells[i]))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	for _, m := range r.Members {
		if m.Err == nil {
			continue
		}
		cells := []string{m.Cluster}
		if r.AllNamespaces {
			cells = append(cells, none)
		}
		cells = append(cells, "error: "+oneLine(m.Err.Error()))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func rowNamespace(row metav1.TableRow) string {
	if len(row.Object.Raw) == 0 {
		return ""
	}
	var m metav1.PartialObjectMetadata
	if json.Unmarshal(row.Object.Raw, &m) != nil {
		return ""
	}
	return m.Namespace
}

// formatCell prints a cell as kubectl does.
func formatCell(v any) string {
	switch c := v.(type) {
	case nil:
		return "<none>"
	case string:
		if c == "" {
			return "<none>"
		}
		return c
	case float64:
		if c == float64(int64(c)) {
			return strconv.FormatInt(int64(c), 10)
		}
		return strconv.FormatFloat(c, 'f', -1, 64)
	default:
		return fmt.Sprint(c)
	}
}

func printObjects(w io.Writer, r *GetResult, format string) error {
	items := []any{}
	for _, m := range r.Members {
		for _, it := range m.Items {
			it := it.DeepCopy()
			a := it.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[ClusterAnnotation] = m.Cluster
			it.SetAnnotations(a)
			items = append(items, it.Object)
		}
	}
	return writeList(w, items, format)
}
