package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	namespacectrl "github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

const (
	holdCostNamespace = "holdcost"
	// holdCostSample is how often the denials and Events are sampled.
	holdCostSample = 10 * time.Second
	// holdCostMinPhase is how long a phase is watched at least.
	holdCostMinPhase = 60 * time.Second
	// holdCostStatusRounds is the number of status changes written to every Deployment,
	// holdCostStatusGap apart.
	holdCostStatusRounds = 3
	holdCostStatusGap    = 2 * time.Second

	vapCheckTotal   = "apiserver_validating_admission_policy_check_total"
	apiRequestTotal = "apiserver_request_total"
)

// BenchmarkHoldCost measures what the host hold (controllers/namespace) costs the host: its
// kube-controller-manager keeps trying to act on templates in a held namespace and is
// denied, and it prints how many denials that makes, whether and when they stop, and the
// Events they leave. Nothing is asserted about time: the figures are the output.
//
// The host runs kube-controller-manager (each controller with its own ServiceAccount, the
// volume binder on) and, in this process, only the namespace controllers (the hold and the
// held label). In a held namespace it creates FLOTILLA_HOLDCOST_TEMPLATES (default 50) each
// of Deployments (2 replicas), StatefulSets (1 replica) and DaemonSets, and samples every 10 s
// the requests denied by the hold (apiserver_validating_admission_policy_check_total of the
// binding flotilla-template-hold, which counts each denied request once) and the core/v1
// Events of the namespace. It then writes 3 status changes, 2 s apart, to every Deployment,
// as Flotilla writes the fleet's status there, and samples again. The apiserver's 422
// responses by verb and resource (apiserver_request_total; nothing else is refused in this
// cluster) say which requests were denied, and so which controller made them.
//
// A phase lasts FLOTILLA_HOLDCOST_WINDOW (default 6m), or ends once quiet: at least 60 s in,
// and no new denial for as long as the phase had been active before the last one (and at
// least 30 s). The controllers retry with an exponential backoff (5 ms doubling), so the gap
// before the next retry is about as long as the retries so far took: a fixed quiet span
// would end a phase in the gap between two retries.
//
// Measured with 30 templates of each kind on the 2-core machine (Kubernetes 1.36): after
// create, 32 denials per Deployment (16 attempts, each a ReplicaSet and a status write; the
// last at 3m20s, then the key is dropped) and 17 per StatefulSet or DaemonSet in 6 minutes
// (ControllerRevisions; those controllers have no retry limit: their backoff doubles up to
// 1000 s and they retry every 1000 s for ever). 3 status changes, 2 s apart, restart one
// whole Deployment cycle: 31.6 denials per Deployment, the last at 3m20s. Events: one
// ReplicaSetCreateError Event per Deployment, its count capped near 25 by the recorder's
// spam filter; none for StatefulSets and DaemonSets.
//
//	FLOTILLA_HOLDCOST_TEMPLATES=30 go test -run '^$' -bench HoldCost -benchtime 1x -timeout 30m ./test/bench/
func BenchmarkHoldCost(b *testing.B) {
	templates := envInt(b, "FLOTILLA_HOLDCOST_TEMPLATES", 50)
	window := envDuration(b, "FLOTILLA_HOLDCOST_WINDOW", 6*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+2*window+time.Duration(templates)*time.Second)
	defer cancel()

	env, err := framework.StartFleetWith(ctx, localcluster.Options{Name: "holdcost-host", ControllerManager: true,
		ExtraControllerManagerArgs: []string{"--controllers=" + localcluster.ControllerManagerControllersWithVolumeBinder}}, nil, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := env.Fleet.Stop(); err != nil {
			b.Errorf("stopping the fleet: %v", err)
		}
	})
	stopManager := startHoldManager(ctx, b, env.Fleet.Host.RESTConfig())
	b.Cleanup(stopManager) // before the fleet stops: cleanups run last first

	kube := clientFor(b, env.Fleet.Host.RESTConfig())
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: holdCostNamespace,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitHoldEnforced(ctx, b, env.Fleet.Host.RESTConfig(), env.Host.Scheme(), holdCostNamespace)

	fmt.Printf("\nhold cost: %d Deployments, %d StatefulSets and %d DaemonSets in held namespace %s (window %s, sampled every %s)\n",
		templates, templates, templates, holdCostNamespace, window, holdCostSample)
	base := scrapeHoldMetrics(ctx, b, kube)
	began := time.Now()
	for i := range templates {
		for _, o := range holdCostTemplates(i) {
			if err := env.Host.Create(ctx, o); err != nil {
				b.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	fmt.Printf("created %d templates in %s\n", 3*templates, time.Since(began).Round(time.Millisecond))
	created := observeHoldPhase(ctx, b, kube, "after create", began, base, base, 3*templates, window)

	statusBase := scrapeHoldMetrics(ctx, b, kube)
	statusBegan := time.Now()
	for round := range holdCostStatusRounds {
		if round > 0 {
			time.Sleep(holdCostStatusGap)
		}
		for i := range templates {
			writeDeploymentStatus(ctx, b, kube, fmt.Sprintf("web-%d", i), int32(round))
		}
	}
	fmt.Printf("wrote %d status changes to each of the %d Deployments in %s\n", holdCostStatusRounds, templates,
		time.Since(statusBegan).Round(time.Millisecond))
	changed := observeHoldPhase(ctx, b, kube, "after status changes", statusBegan, statusBase, base, 3*templates, window)

	evs := listHoldEvents(ctx, b, kube)
	statusChanges := float64(templates * holdCostStatusRounds)
	createdDeploy := created.deployments()
	changedDeploy := changed.deployments()

	fmt.Printf("\nhold cost summary (%d templates: %d each of Deployment, StatefulSet, DaemonSet)\n", 3*templates, templates)
	row := func(name, value string) { fmt.Printf("  %-58s %s\n", name, value) }
	row("requests denied after create", fmt.Sprintf("%.0f (%.1f per template)", created.denied, created.denied/float64(3*templates)))
	row("  of them for Deployments (replicasets, deployments/*)", fmt.Sprintf("%.0f (%.1f per Deployment)", createdDeploy, createdDeploy/float64(templates)))
	row("time until quiet after create", created.quietText())
	row("requests denied after the status changes", fmt.Sprintf("%.0f", changed.denied))
	row("  of them for Deployments (replicasets, deployments/*)", fmt.Sprintf("%.0f (%.1f per Deployment, %.2f per status change)",
		changedDeploy, changedDeploy/float64(templates), changedDeploy/statusChanges))
	row("time until quiet after the status changes", changed.quietText())
	row("Events in the namespace (objects / count)", fmt.Sprintf("%d / %d (%.2f / %.2f per template)", evs.objects, evs.count,
		float64(evs.objects)/float64(3*templates), float64(evs.count)/float64(3*templates)))
	fmt.Printf("  denied requests (422 responses) by verb and resource, and when the last was seen:\n")
	fmt.Printf("    %-30s %14s %10s %14s %10s\n", "", "after create", "last", "after status", "last")
	last := func(p holdPhase, k string) string {
		if p.rejected[k] == 0 {
			return "-"
		}
		return p.rejectedLast[k].String()
	}
	for _, k := range sortedKeys(created.rejected, changed.rejected) {
		fmt.Printf("    %-30s %14.0f %10s %14.0f %10s\n", k, created.rejected[k], last(created, k), changed.rejected[k], last(changed, k))
	}
	fmt.Printf("  Events by source and reason (objects / count):\n")
	for _, k := range sortedKeys(evs.byReason) {
		fmt.Printf("    %-58s %d / %d\n", k, evs.objectsByReason[k], evs.byReason[k])
	}
	fmt.Printf("  policy checks that denied, by binding (one per binding that matches a denied request):\n")
	end := scrapeHoldMetrics(ctx, b, kube)
	for _, k := range sortedKeys(end.checkByBinding) {
		fmt.Printf("    %-58s %.0f\n", k, end.checkByBinding[k]-base.checkByBinding[k])
	}

	b.ReportMetric(created.denied/float64(3*templates), "denied/template")
	b.ReportMetric(createdDeploy/float64(templates), "denied/deployment")
	b.ReportMetric(changedDeploy/statusChanges, "denied/status-change")
	b.ReportMetric(float64(evs.count)/float64(3*templates), "events/template")
}

// startHoldManager runs the hold's controllers alone in this process, as the admin.
func startHoldManager(ctx context.Context, b *testing.B, cfg *rest.Config) (stop func()) {
	mgr := newBenchManager(b, cfg)
	if err := (&namespacectrl.HoldReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	if err := (&namespacectrl.HeldReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespace-controller")}).SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
	}
}

// waitHoldEnforced waits until the apiserver denies a host controller's ControllerRevision in
// ns (a dry run), as controllers/namespace's waitHeld does.
func waitHoldEnforced(ctx context.Context, b *testing.B, cfg *rest.Config, scheme *k8sruntime.Scheme, ns string) {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:kube-controller-manager", Groups: []string{"system:masters", "system:authenticated"}}
	kcm, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	var last error
	waitForEvery(ctx, b, "the hold to be enforced", 100*time.Millisecond, func() bool {
		rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Revision: 1,
			Data: k8sruntime.RawExtension{Raw: []byte("{}")}}
		last = kcm.Create(ctx, rev, client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "ControllerRevisions")
	}, func() string { return fmt.Sprintf("last dry run: %v", last) })
}

func waitForEvery(ctx context.Context, b *testing.B, what string, every time.Duration, cond func() bool, detail func() string) {
	for !cond() {
		select {
		case <-ctx.Done():
			b.Fatalf("timed out waiting for %s (%s)", what, detail())
		case <-time.After(every):
		}
	}
}

// holdCostTemplates are template i of each kind.
func holdCostTemplates(i int) []client.Object {
	pod := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}}}}}
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: holdCostNamespace, Name: name, Labels: map[string]string{"app": name}}
	}
	sel := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	}
	web, db, agent := fmt.Sprintf("web-%d", i), fmt.Sprintf("db-%d", i), fmt.Sprintf("agent-%d", i)
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: meta(web), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: sel(web), Template: pod(web)}},
		&appsv1.StatefulSet{ObjectMeta: meta(db), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: sel(db), Template: pod(db),
			ServiceName: db}},
		&appsv1.DaemonSet{ObjectMeta: meta(agent), Spec: appsv1.DaemonSetSpec{Selector: sel(agent), Template: pod(agent)}},
	}
}

// writeDeploymentStatus writes a Deployment's status as Flotilla writes the fleet's: round 0,
// 1, 2 make 0, 1, 2 of its 2 replicas ready.
func writeDeploymentStatus(ctx context.Context, b *testing.B, kube kubernetes.Interface, name string, round int32) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := kube.AppsV1().Deployments(holdCostNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		replicas := ptr.Deref(d.Spec.Replicas, 1)
		ready := min(round, replicas)
		d.Status.ObservedGeneration = d.Generation
		d.Status.Replicas = replicas
		d.Status.UpdatedReplicas = replicas
		d.Status.ReadyReplicas = ready
		d.Status.AvailableReplicas = ready
		d.Status.UnavailableReplicas = replicas - ready
		_, err = kube.AppsV1().Deployments(holdCostNamespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		b.Fatalf("writing the status of Deployment %s: %v", name, err)
	}
}

// holdMetrics are the host apiserver's counters that the hold moves.
type holdMetrics struct {
	// denied is the number of requests the hold denied: the checks that denied, of binding
	// flotilla-template-hold (a held namespace is labelled for it throughout).
	denied float64
	// checkByBinding are the checks that denied, by binding.
	checkByBinding map[string]float64
	// rejected are the 422 responses, by "VERB resource[/subresource]".
	rejected map[string]float64
}

func scrapeHoldMetrics(ctx context.Context, b *testing.B, kube kubernetes.Interface) holdMetrics {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatalf("reading the apiserver's metrics: %v", err)
	}
	// Only the two families: the parser rejects the whole input for one line it cannot read.
	var keep bytes.Buffer
	for line := range bytes.Lines(raw) {
		s := string(line)
		for _, name := range []string{vapCheckTotal, apiRequestTotal} {
			if strings.HasPrefix(s, name+"{") || strings.HasPrefix(s, name+" ") ||
				strings.HasPrefix(s, "# HELP "+name+" ") || strings.HasPrefix(s, "# TYPE "+name+" ") {
				keep.Write(line)
			}
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&keep)
	if err != nil {
		b.Fatalf("parsing the apiserver's metrics: %v", err)
	}
	m := holdMetrics{checkByBinding: map[string]float64{}, rejected: map[string]float64{}}
	if f := families[vapCheckTotal]; f != nil {
		for _, s := range f.GetMetric() {
			l := labels(s)
			if l["policy"] != namespacectrl.HoldPolicyName || l["enforcement_action"] != "deny" {
				continue
			}
			m.checkByBinding[l["policy_binding"]] += s.GetCounter().GetValue()
			if l["policy_binding"] == namespacectrl.HoldPolicyName {
				m.denied += s.GetCounter().GetValue()
			}
		}
	}
	if f := families[apiRequestTotal]; f != nil {
		for _, s := range f.GetMetric() {
			l := labels(s)
			if l["code"] != "422" {
				continue
			}
			what := l["resource"]
			if l["subresource"] != "" {
				what += "/" + l["subresource"]
			}
			if l["dry_run"] != "" {
				what += " (dry run)"
			}
			m.rejected[l["verb"]+" "+what] += s.GetCounter().GetValue()
		}
	}
	return m
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// holdEvents are the core/v1 Events of the held namespace.
type holdEvents struct {
	objects, count  int
	byReason        map[string]int // count, by "source: reason (kind)"
	objectsByReason map[string]int
}

func listHoldEvents(ctx context.Context, b *testing.B, kube kubernetes.Interface) holdEvents {
	list, err := kube.CoreV1().Events(holdCostNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("listing Events: %v", err)
	}
	e := holdEvents{byReason: map[string]int{}, objectsByReason: map[string]int{}}
	for _, ev := range list.Items {
		n := int(ev.Count)
		if ev.Series != nil {
			n = max(n, int(ev.Series.Count))
		}
		n = max(n, 1)
		source := cmp.Or(ev.ReportingController, ev.Source.Component, "?")
		k := fmt.Sprintf("%s: %s (%s)", source, ev.Reason, ev.InvolvedObject.Kind)
		e.objects++
		e.count += n
		e.byReason[k] += n
		e.objectsByReason[k]++
	}
	return e
}

// holdPhase is what one phase saw.
type holdPhase struct {
	denied   float64            // requests denied during the phase
	rejected map[string]float64 // 422 responses during the phase
	// rejectedLast is when a 422 response of that verb and resource was last seen, from the
	// phase's start.
	rejectedLast map[string]time.Duration
	lastChange   time.Duration // when the last denial was seen, from the phase's start
	quietAt      time.Duration // when the phase was found quiet; 0: not within the window
	window       time.Duration
}

func (p holdPhase) quietText() string {
	if p.quietAt == 0 {
		return fmt.Sprintf("not quiet within %s (last new denial seen at %s)", p.window, p.lastChange)
	}
	return fmt.Sprintf("last new denial seen at %s (quiet until %s)", p.lastChange, p.quietAt)
}

// deployments are the denied requests of the Deployment controller: its ReplicaSets and
// Deployments' status (and scale or finalizers, if any).
func (p holdPhase) deployments() float64 {
	var n float64
	for k, v := range p.rejected {
		if _, res, _ := strings.Cut(k, " "); !strings.Contains(k, "dry run") &&
			(strings.HasPrefix(res, "replicasets") || strings.HasPrefix(res, "deployments")) {
			n += v
		}
	}
	return n
}

// observeHoldPhase samples the denials and Events from began until the phase is quiet or
// window has passed. phaseBase is the metrics at began, createBase those before the templates.
func observeHoldPhase(ctx context.Context, b *testing.B, kube kubernetes.Interface, name string, began time.Time,
	phaseBase, createBase holdMetrics, templates int, window time.Duration) holdPhase {
	fmt.Printf("\n%s:\n  %8s %10s %12s %10s %10s %12s\n", name, "elapsed", "denied", "denied all", "/template", "events", "event count")
	p := holdPhase{window: window, rejectedLast: map[string]time.Duration{}}
	prev := phaseBase.denied
	prevRejected := phaseBase.rejected
	var cur holdMetrics
	for {
		next := began.Add(time.Duration(int(time.Since(began)/holdCostSample)+1) * holdCostSample)
		select {
		case <-ctx.Done():
			b.Fatalf("%s: %v", name, ctx.Err())
		case <-time.After(time.Until(next)):
		}
		elapsed := time.Since(began).Round(time.Second)
		cur = scrapeHoldMetrics(ctx, b, kube)
		evs := listHoldEvents(ctx, b, kube)
		if cur.denied != prev {
			p.lastChange, prev = elapsed, cur.denied
		}
		for k, v := range cur.rejected {
			if v != prevRejected[k] {
				p.rejectedLast[k] = elapsed
			}
		}
		prevRejected = cur.rejected
		fmt.Printf("  %8s %10.0f %12.0f %10.2f %10d %12d\n", elapsed, cur.denied-phaseBase.denied, cur.denied-createBase.denied,
			(cur.denied-createBase.denied)/float64(templates), evs.objects, evs.count)
		if elapsed >= holdCostMinPhase && elapsed-p.lastChange >= max(3*holdCostSample, p.lastChange) {
			p.quietAt = elapsed
			break
		}
		if elapsed >= window {
			break
		}
	}
	p.denied = cur.denied - phaseBase.denied
	p.rejected = map[string]float64{}
	for k, v := range cur.rejected {
		if d := v - phaseBase.rejected[k]; d != 0 {
			p.rejected[k] = d
		}
	}
	return p
}

func sortedKeys[V any](ms ...map[string]V) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// envDuration reads a positive duration from the environment, or returns def.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}
