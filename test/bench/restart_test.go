package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// BenchmarkRestart measures what a manager restart costs (issue 41 item 4): over
// FLOTILLA_BENCH_RESTART_TEMPLATES bound templates (10,000 by default; a Deployment each,
// one PropagationPolicy Divided over the three apiserver-only members), once every binding is
// FullyApplied, the manager is stopped and started again twice:
//
//  1. nothing changes meanwhile: the writes the new process makes to the host and to the
//     members (target 0), and how long it takes to look at everything again (re-verified:
//     every reconcile the initial lists queued is done, target ≤ 60 s);
//  2. a template is created as soon as the new process has started looking (any controller's
//     first reconcile): how long until its objects are on every member (target ≤ 1 s),
//     while the rest is re-verified.
//
// Writes are counted from the new process's own client metrics (flotilla_host_requests_total
// by verb, rest_client_requests_total towards the members).
func BenchmarkRestart(b *testing.B) {
	templates := envInt(b, "FLOTILLA_BENCH_RESTART_TEMPLATES", 10000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	env, err := framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(len(members), false), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Fleet.Stop()
	mgr := startManager(ctx, b, env)
	for _, m := range members {
		if err := env.Join(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(ctx, b, "members Ready", func() bool { return clustersReady(ctx, env) })
	if err := env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}); err != nil {
		b.Fatal(err)
	}
	if err := env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "all"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement:         dividedPlacement(members)}}); err != nil {
		b.Fatal(err)
	}
	host := clientFor(b, env.Fleet.Host.RESTConfig())
	watch := newWatcher(ctx, b, env, members)
	start := time.Now()
	parallelDo(templates, func(i int) {
		if _, err := host.AppsV1().Deployments(namespace).Create(ctx, deployment(fmt.Sprintf("app-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	})
	waitEvery(ctx, b, "all bindings FullyApplied", 100*time.Millisecond, func() bool { return watch.fullyCount("app-") == templates })
	bound := time.Since(start)

	emptyStatuses := worksWithoutStatuses(ctx, b, env)
	versionsBefore := memberVersions(ctx, b, env)

	b.ResetTimer()
	// 1. A restart with nothing to do.
	mgr.stop()
	memberClusters := make([]*localcluster.Cluster, 0, len(members))
	for _, m := range members {
		memberClusters = append(memberClusters, env.Fleet.Member(m))
	}
	cpuBefore := sampleCPU(env.Fleet.Host, memberClusters)
	mgr = startManager(ctx, b, env)
	started := time.Now()
	profiled := mgr.cpuProfile(ctx, b, "restart")
	verified := mgr.waitReverified(ctx, b, templates)
	cpuVerified := sampleCPU(env.Fleet.Host, memberClusters, mgr)
	<-profiled
	quiet := mgr.writes(b)
	quietEvents := eventReasonsSince(ctx, b, host, started)
	changed := changedVersions(versionsBefore, memberVersions(ctx, b, env))
	// 2. A restart with a template created while the rest is re-verified.
	mgr.stop()
	mgr = startManager(ctx, b, env)
	restarted := time.Now()
	// As soon as any controller is at work: the detector's first reconcile may come after
	// its initial lists, and waiting for it would create the template later in the start.
	waitEvery(ctx, b, "the manager at work", 5*time.Millisecond, func() bool {
		return mgr.scrapeQuiet().sum("controller_runtime_reconcile_total", "", "") > 0
	})
	atCreate := mgr.scrape(b)
	trace := tracePath(ctx, b, env, "during-restart-deployment")
	created := time.Now()
	if _, err := host.AppsV1().Deployments(namespace).Create(ctx, deployment("during-restart"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(ctx, b, "the new template on every member", func() bool { return watch.count("during-restart", len(members)) == 1 })
	latency := watch.applied("during-restart").Sub(created)
	atArrival := mgr.scrape(b)
	detectorDone := atArrival.sum("controller_runtime_reconcile_total", "controller", "detector")
	mgr.waitReverified(ctx, b, templates+1)
	b.StopTimer()
	mgr.stop()

	t := &targetTable{}
	t.row(fmt.Sprintf("%d templates bound (a Deployment each, Divided over %d members)", templates, len(members)), bound.Round(time.Second).String(), "", true)
	t.row("restart, nothing changed: host writes (create/update/patch/delete, events included)", fmt.Sprintf("%.0f", quiet.host), "0", quiet.host == 0)
	if len(quiet.hostBy) > 0 {
		t.row("  of which", strings.Join(quiet.hostBy, ", "), "", true)
	}
	if len(quietEvents) > 0 {
		t.row("  the events among them, by reason", strings.Join(quietEvents, ", "), "", true)
	}
	t.row("  Works without manifestStatuses before the restart", fmt.Sprint(emptyStatuses), "", true)
	t.row("restart, nothing changed: member write requests (server-side applies)", fmt.Sprintf("%.0f", quiet.members), "0", quiet.members == 0)
	t.row("  member read requests (GET: lists, watches' lists, a check of each Work's member object)", fmt.Sprintf("%.0f", quiet.memberReads), "", true)
	t.row("  Works found as last applied from the member object's managedFields (read, not applied)", fmt.Sprintf("%.0f", quiet.unchanged), "", true)
	t.row("  member objects the restart changed (resourceVersion not as before)", fmt.Sprintf("%d of %d", changed, len(versionsBefore)), "0", changed == 0)
	t.row("restart → everything re-verified (every queue drained after the initial lists)", verified.Sub(started).Round(100*time.Millisecond).String(), "≤ 60 s", verified.Sub(started) <= time.Minute)
	t.row("  CPU from the start to re-verified, per template: host apiserver / host etcd / manager / members / bench client",
		cpuRow(cpuBefore, cpuVerified, templates), "", true)
	t.row("template created during re-verification → on every member", latency.Round(time.Millisecond).String(), "≤ 1 s", latency <= time.Second)
	t.row("  its way there (first seen on the host, and on each member)", trace.since(created, watch.seenOn("during-restart")), "", true)
	t.row("  created after the start", created.Sub(restarted).Round(10*time.Millisecond).String(), "", true)
	t.row("  detector reconciles done when it was created / when it reached the members", fmt.Sprintf("%.0f / %.0f of %d",
		atCreate.sum("controller_runtime_reconcile_total", "controller", "detector"), detectorDone, templates+1), "", true)
	fmt.Println()
	t.print()
	fmt.Println("where the time went while the new template propagated (all keys of each stage, initial lists included): per stage, queue wait and work time")
	for _, l := range stageTable(atCreate, atArrival) {
		fmt.Println(l)
	}
	b.ReportMetric(quiet.host, "host-writes-after-restart")
	b.ReportMetric(quiet.members, "member-writes-after-restart")
	b.ReportMetric(quiet.memberReads, "member-reads-after-restart")
	b.ReportMetric(verified.Sub(started).Seconds(), "s/reverified")
	b.ReportMetric(latency.Seconds(), "s/new-template-during-restart")
}

// cpuProfile saves a CPU profile of the manager's first 30 s (or until it stops) to
// $TMPDIR/flotilla-bench-cpu-NAME.pb.gz when FLOTILLA_BENCH_PPROF is set, in the background;
// the channel closes when it is saved, or at once when there is nothing to do. Read it with
// `go tool pprof -top FILE`.
func (m *managerProcess) cpuProfile(ctx context.Context, b *testing.B, name string) <-chan struct{} {
	done := make(chan struct{})
	if os.Getenv("FLOTILLA_BENCH_PPROF") == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		url := "http://" + m.pprofAddr + "/debug/pprof/profile?seconds=30"
		var resp *http.Response
		// The manager serves pprof a moment after it starts.
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		waitUntil(wait, 20*time.Millisecond, func() bool {
			var err error
			resp, err = http.Get(url)
			return err == nil
		})
		if resp == nil {
			b.Log("no CPU profile: the manager did not serve pprof")
			return
		}
		defer resp.Body.Close()
		path := filepath.Join(os.TempDir(), "flotilla-bench-cpu-"+name+".pb.gz")
		f, err := os.Create(path)
		if err != nil {
			b.Log(err)
			return
		}
		defer f.Close()
		if _, err := io.Copy(f, resp.Body); err != nil {
			b.Log(err)
			return
		}
		fmt.Println("the manager's CPU profile:", path)
	}()
	return done
}

// scrapeQuiet is scrape for polling: a manager not serving its metrics yet reads as empty.
func (m *managerProcess) scrapeQuiet() metricsSnapshot {
	resp, err := http.Get("http://" + m.metricsAddr + "/metrics")
	if err != nil {
		return metricsSnapshot{}
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return metricsSnapshot{}
	}
	return mfs
}

// waitReverified waits until the manager has looked again at everything its initial lists
// queued: the detector and the binding-status controller have reconciled at least n keys, and
// every work queue (the controllers' and the member event queues) is empty, twice in a row
// 250 ms apart. It returns when that was first seen.
func (m *managerProcess) waitReverified(ctx context.Context, b *testing.B, n int) time.Time {
	var at time.Time
	waitEvery(ctx, b, "re-verification", 250*time.Millisecond, func() bool {
		s := m.scrapeQuiet()
		done := s.sum("controller_runtime_reconcile_total", "controller", "detector") >= float64(n) &&
			s.sum("controller_runtime_reconcile_total", "controller", "binding-status") >= float64(n) &&
			s.sum("controller_runtime_reconcile_total", "controller", "binding") >= float64(n) &&
			s.sum("workqueue_depth", "", "") == 0
		switch {
		case !done:
			at = time.Time{}
			return false
		case at.IsZero():
			at = time.Now()
			return false
		}
		return true
	})
	return at
}

// writeCounts are the writes a manager process made: to the host, with the controller and
// verb of each kind of write, and to the members.
type writeCounts struct {
	host, members float64
	hostBy        []string
	// memberReads are the GETs and LISTs sent to the members (a check after a start reads
	// each member object once); unchanged, the Works found as last applied.
	memberReads, unchanged float64
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// writes reads the manager's writes so far from its metrics.
func (m *managerProcess) writes(b *testing.B) writeCounts {
	s := m.scrape(b)
	var out writeCounts
	for k, v := range s.hostRequests() {
		// Reviews (a SelfSubjectReview at start) are answered, never stored.
		if writeVerbs[k.verb] && v > 0 && !strings.HasSuffix(k.resource, "reviews.authentication.k8s.io") {
			out.host += v
			out.hostBy = append(out.hostBy, fmt.Sprintf("%s %s %s %.0f", k.controller, k.verb, k.resource, v))
		}
	}
	if mf := s["rest_client_requests_total"]; mf != nil {
		for _, mt := range mf.GetMetric() {
			if label(mt, "host") == m.hostAddr {
				continue
			}
			switch label(mt, "method") {
			case "POST", "PUT", "PATCH", "DELETE":
				out.members += mt.GetCounter().GetValue()
			case "GET":
				out.memberReads += mt.GetCounter().GetValue()
			}
		}
	}
	out.unchanged = s.sum("flotilla_execution_applies_total", "result", "unchanged")
	return out
}

// sum adds the values of a metric's series whose label lbl is value (lbl "": all series);
// counters, gauges and untyped alike.
func (s metricsSnapshot) sum(name, lbl, value string) float64 {
	mf := s[name]
	if mf == nil {
		return 0
	}
	var out float64
	for _, mt := range mf.GetMetric() {
		if lbl != "" && label(mt, lbl) != value {
			continue
		}
		switch {
		case mt.GetCounter() != nil:
			out += mt.GetCounter().GetValue()
		case mt.GetGauge() != nil:
			out += mt.GetGauge().GetValue()
		default:
			out += mt.GetUntyped().GetValue()
		}
	}
	return out
}

// eventReasonsSince lists the host's events recorded since a time, counted by reason and kind
// of object ("ClusterReady Cluster 3").
func eventReasonsSince(ctx context.Context, b *testing.B, host *kubernetes.Clientset, since time.Time) []string {
	list, err := host.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range list.Items {
		if e.EventTime.Time.Before(since) && e.CreationTimestamp.Time.Before(since) {
			continue
		}
		counts[e.Reason+" "+e.Regarding.Kind]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(out)
	return out
}

// worksWithoutStatuses counts the host's Works whose status has no manifestStatuses.
func worksWithoutStatuses(ctx context.Context, b *testing.B, env *framework.Env) int {
	list := &workv1alpha1.WorkList{}
	if err := env.Host.List(ctx, list); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, w := range list.Items {
		if len(w.Status.ManifestStatuses) == 0 {
			n++
		}
	}
	return n
}

// memberVersions maps every member's Deployments of the bench namespace (member/name) to
// their resourceVersions.
func memberVersions(ctx context.Context, b *testing.B, env *framework.Env) map[string]string {
	out := map[string]string{}
	for _, m := range members {
		list, err := clientFor(b, env.Fleet.Member(m).RESTConfig()).AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range list.Items {
			out[m+"/"+d.Name] = d.ResourceVersion
		}
	}
	return out
}

// changedVersions counts the objects of before whose resourceVersion is not the same in
// after (or that are gone).
func changedVersions(before, after map[string]string) int {
	n := 0
	for k, v := range before {
		if after[k] != v {
			n++
		}
	}
	return n
}
