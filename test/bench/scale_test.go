package bench

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// Scale bench defaults (issue 16 item 6). Duplicated puts every template on every member,
// so 30 members × 5,000 templates would be 150,000 member objects: its run uses
// FLOTILLA_SCALE_DUPLICATED_TEMPLATES, 1,000 by default.
const (
	// scaleMembers is what this 2-core machine holds with room for a run: each idle member
	// (kube-apiserver and etcd) takes about 225 MiB and 2 % of a core (docs/host-cost.md,
	// Bigger fleets).
	scaleMembers             = 30
	scaleTemplates           = 5000
	scaleDuplicatedTemplates = 1000
	scalePlacements          = "Divided,Duplicated"
	// scaleReplicas runs every placement with one unsharded manager, then with 3 sharded
	// replicas on the same fleet (issue 41 item 5).
	scaleReplicas = "1,3"
	// scaleSampleEvery is how often the member objects are counted for the plot.
	scaleSampleEvery = 500 * time.Millisecond
	// scaleProgressEvery is how often a run prints how far it got.
	scaleProgressEvery = 30 * time.Second
)

// BenchmarkScale is the opt-in scale bench (`make bench-scale`, FLOTILLA_BENCH_SCALE=1):
// FLOTILLA_SCALE_MEMBERS (30) apiserver-only members, the manager binary as a separate
// process, and for each placement of FLOTILLA_SCALE_PLACEMENTS ("Divided,Duplicated") a run of
// FLOTILLA_SCALE_TEMPLATES (5,000) Deployments, each with its own PropagationPolicy, created by
// the 8-way parallel client of BenchmarkPropagation:
//
//   - Divided: the 3 replicas divided over all members, weighted 1:1:...; each template
//     lands on min(3, members) members, which ones its own tie-break decides;
//   - Duplicated: every template on every member, FLOTILLA_SCALE_DUPLICATED_TEMPLATES
//     (1,000, at most FLOTILLA_SCALE_TEMPLATES) of them.
//
// Each run waits until every member object exists and every binding is FullyApplied, then
// deletes the templates and waits until the member objects are gone. It prints one row per
// run and writes a PNG plot of the member objects over time into FLOTILLA_SCALE_OUT
// (docs/bench-scale/ of the repository). FLOTILLA_SCALE_REPLICAS ("1,3") are the numbers of
// manager replicas the runs are repeated with on the same fleet; more than one are
// leader-elected and sharded into twice as many shards.
//
// It also prints what the manager costs per joined member (members are joined a third at a
// time, the manager's idle memory and CPU measured after each third: scaleFleet), with the
// line through those samples projected to 100 and 1,000 members, and each sharded replica's
// CPU-seconds and peak RSS as a share of the unsharded manager's (shardLines).
func BenchmarkScale(b *testing.B) {
	if os.Getenv("FLOTILLA_BENCH_SCALE") != "1" {
		b.Skip("opt-in: make bench-scale (FLOTILLA_BENCH_SCALE=1)")
	}
	cfg := scaleConfigFromEnv(b)
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Hour+30*time.Minute) // inside make bench-scale's 600m
	defer cancel()

	fmt.Printf("\nscale bench: a host and %d apiserver-only members, manager replicas %v; load average %s\n", cfg.members, cfg.counts, loadAverage())
	fleetStart := time.Now()
	cfg.replicas, firstReplicas = cfg.counts[0], cfg.counts[0]
	env, mgrs, names, idle := scaleFleet(ctx, b, cfg.members, cfg.replicas)
	fmt.Printf("fleet started and %d members joined and Ready in %s\n", len(names), time.Since(fleetStart).Round(time.Second))
	if err := env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}); err != nil {
		b.Fatal(err)
	}
	s := &scaleSetup{scaleConfig: cfg, env: env, mgrs: mgrs, names: names,
		host: clientFor(b, env.Fleet.Host.RESTConfig()), watch: newWatcher(ctx, b, env, names)}

	b.ResetTimer()
	rows := [][]string{{"placement", "members × templates", "manager replicas", "member objects",
		"all member objects", "all FullyApplied", "member objects/s", "create → last member object p50 / p99",
		"create → FullyApplied p50 / p99", "host requests / template", "manager peak RSS", "heap after GC peak (largest replica) / end (all)",
		"delete → member objects gone", "manager CPU-s (largest replica / all)", "load average (start → end)"}}
	var details []string
	var costs []runCost
	for i, n := range cfg.counts {
		if i > 0 {
			// The same fleet, other managers: the last ones stop, the next ones start and
			// find every member joined.
			fmt.Printf("restarting the manager as %d replica(s)\n", n)
			s.mgrs.stop()
			s.mgrs, s.replicas = managers(startManagers(ctx, b, env, n)), n
			b.Cleanup(s.mgrs.stop)
			s.mgrs.waitServing(ctx, b, 2*n)
			waitMembersReady(ctx, b, env, names)
		}
		for _, p := range cfg.placements {
			r := s.run(ctx, b, p)
			printColumns([][]string{rows[0], r.row}) // now, in case a later run does not finish
			rows = append(rows, r.row)
			details = append(details, r.details...)
			costs = append(costs, r.cost)
		}
	}
	b.StopTimer()

	fmt.Println()
	printColumns(rows)
	if cfg.duplicatedTemplates < cfg.templates && contains(cfg.placements, "Duplicated") {
		fmt.Printf("Duplicated ran %d templates, not %d: every template goes to every member (FLOTILLA_SCALE_DUPLICATED_TEMPLATES, %d by default)\n",
			cfg.duplicatedTemplates, cfg.templates, scaleDuplicatedTemplates)
	}
	fmt.Println("percentiles over fewer than 100 samples are the maximum; host requests are the manager's flotilla_host_requests_total, create → FullyApplied")
	for _, d := range details {
		fmt.Println(d)
	}
	for _, l := range perMemberLines(idle, costs) {
		fmt.Println(l)
	}
	for _, l := range shardLines(costs) {
		fmt.Println(l)
	}
	if !slices.Contains(cfg.counts, 1) || !slices.ContainsFunc(cfg.counts, func(n int) bool { return n > 1 }) {
		fmt.Println("\nsharded replicas against one unsharded manager (issue 41 item 5): not measured; FLOTILLA_SCALE_REPLICAS=1,3 runs both on the same fleet")
	}
}

type scaleConfig struct {
	members, templates, duplicatedTemplates int
	// counts are the manager replica counts the runs are repeated with; replicas is the
	// current one.
	counts     []int
	replicas   int
	placements []string
	out        string
}

func scaleConfigFromEnv(b *testing.B) scaleConfig {
	c := scaleConfig{
		members:   envInt(b, "FLOTILLA_SCALE_MEMBERS", scaleMembers),
		templates: envInt(b, "FLOTILLA_SCALE_TEMPLATES", scaleTemplates),
		out:       os.Getenv("FLOTILLA_SCALE_OUT"),
	}
	rs := os.Getenv("FLOTILLA_SCALE_REPLICAS")
	if rs == "" {
		rs = scaleReplicas
	}
	counts, err := parseReplicas(rs)
	if err != nil {
		b.Fatal(err)
	}
	c.counts = counts
	c.duplicatedTemplates = envInt(b, "FLOTILLA_SCALE_DUPLICATED_TEMPLATES", min(c.templates, scaleDuplicatedTemplates))
	if c.out == "" {
		c.out = filepath.Join(framework.RepoRoot(), "docs", "bench-scale")
	}
	ps := os.Getenv("FLOTILLA_SCALE_PLACEMENTS")
	if ps == "" {
		ps = scalePlacements
	}
	for _, p := range strings.Split(ps, ",") {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "divided":
			c.placements = append(c.placements, "Divided")
		case "duplicated":
			c.placements = append(c.placements, "Duplicated")
		case "":
		default:
			b.Fatalf("FLOTILLA_SCALE_PLACEMENTS=%q: want a comma-separated list of Divided and Duplicated", ps)
		}
	}
	if len(c.placements) == 0 {
		b.Fatalf("FLOTILLA_SCALE_PLACEMENTS=%q: no placement", ps)
	}
	return c
}

// rssCell is the peak RSS column: one replica's, or the largest replica's and all together.
func rssCell(largestKiB, sumKiB, replicas int, note string) string {
	if replicas == 1 {
		return fmt.Sprintf("%.0f MiB%s", float64(largestKiB)/1024, note)
	}
	return fmt.Sprintf("%.0f MiB largest, %.0f MiB all%s", float64(largestKiB)/1024, float64(sumKiB)/1024, note)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scaleSetup is the fleet, manager and watches the runs share.
type scaleSetup struct {
	scaleConfig
	env   *framework.Env
	mgrs  managers
	names []string
	host  *kubernetes.Clientset
	watch *watcher
}

type scaleResult struct {
	row     []string
	details []string
	cost    runCost
}

// run creates one placement's templates, waits for their member objects and bindings,
// deletes them and waits for the member objects to go, and plots the member objects.
func (s *scaleSetup) run(ctx context.Context, b *testing.B, placementType string) scaleResult {
	templates, perTemplate := s.templates, min(int(*deployment("x").Spec.Replicas), len(s.names))
	placement := dividedPlacement(s.names)
	if placementType == "Duplicated" {
		templates, perTemplate, placement = s.duplicatedTemplates, len(s.names), duplicatedPlacement(s.names)
	}
	// Each replica count's templates have names of their own: the watcher keeps what it saw
	// of earlier runs' templates.
	prefix, metric := strings.ToLower(placementType)[:3]+"-", strings.ToLower(placementType)
	if s.replicas > 1 {
		prefix, metric = fmt.Sprintf("%s%d-", prefix[:3], s.replicas), fmt.Sprintf("%s-r%d", metric, s.replicas)
	}
	name := func(i int) string { return fmt.Sprintf("%s%d", prefix, i) }
	objects := templates * perTemplate
	fmt.Printf("%s: %d templates onto %d members (%d member objects); load average %s\n", placementType, templates, len(s.names), objects, loadAverage())
	loadStart := loadAverage()

	peakNote := ""
	if err := s.mgrs.resetPeakRSS(); err != nil {
		peakNote = " (since start)"
	}
	before := s.mgrs.scrape(b)
	cpuBefore := s.mgrs.cpu()
	var heaps []*heapSampler
	for _, m := range s.mgrs {
		heaps = append(heaps, m.sampleHeap(ctx, b))
	}
	start := time.Now()
	samples := s.sampleObjects(ctx, placementType, prefix, templates, start)
	created := make([]time.Time, templates)
	parallelDo(templates, func(i int) {
		created[i] = time.Now()
		create(ctx, b, s.host, name(i), placement)
	})
	waitEvery(ctx, b, placementType+": all member objects", 50*time.Millisecond, func() bool { return s.watch.count(prefix, perTemplate) >= templates })
	allObjects := time.Since(start)
	waitEvery(ctx, b, placementType+": all bindings FullyApplied", 50*time.Millisecond, func() bool { return s.watch.fullyCount(prefix) >= templates })
	allFully := time.Since(start)
	after := s.mgrs.scrape(b)
	largestRSS, sumRSS := s.mgrs.peakRSS()
	var toObjects, toFully []time.Duration
	for i := 0; i < templates; i++ {
		toObjects = append(toObjects, s.watch.applied(name(i)).Sub(created[i]))
		toFully = append(toFully, s.watch.fully(name(i)).Sub(created[i]))
	}

	delStart := time.Now()
	parallelDo(templates, func(i int) {
		_ = s.host.AppsV1().Deployments(namespace).Delete(ctx, name(i), metav1.DeleteOptions{})
	})
	waitEvery(ctx, b, placementType+": member objects deleted", 50*time.Millisecond, func() bool { return s.watch.remaining(prefix) == 0 })
	deleted := time.Since(delStart)
	afterDelete := s.mgrs.scrape(b)
	cost := runCost{placement: placementType, replicas: s.replicas, members: len(s.names), objects: objects, cpu: s.mgrs.cpu(), peakKiB: s.mgrs.peaks(), leader: s.mgrs.leader()}
	for i := range cost.cpu {
		cost.cpu[i] -= cpuBefore[i]
	}
	series := samples.stop()
	// Heap after GC: the largest replica's peak, and the replicas' last values summed.
	var heapPeak, heapLast float64
	for _, h := range heaps {
		p, l := h.stop()
		heapPeak, heapLast = max(heapPeak, p), heapLast+l
	}
	loadEnd := loadAverage()
	s.cleanUp(ctx, b, prefix)

	perTemplateReqs, reqLines := requestTable(before, after, templates)
	delPerTemplate, delLines := requestTable(after, afterDelete, templates)
	file := filepath.Join(s.out, fmt.Sprintf("%s-%dx%d-r%d.png", strings.ToLower(placementType), len(s.names), templates, s.replicas))
	title := fmt.Sprintf("%s: %d members × %d templates, %d manager replica(s) (load average %s)", placementType, len(s.names), templates, s.replicas, loadStart)
	if err := plotObjects(file, title, series, allObjects.Seconds(), allFully.Seconds(), delStart.Sub(start).Seconds()); err != nil {
		b.Errorf("plotting %s: %v", file, err)
	}
	q50 := func(ds []time.Duration) string {
		if len(ds) < minSamplesForP99 {
			return pct(ds, 50) + " / " + pct(ds, 100) + " (max)"
		}
		return pct(ds, 50) + " / " + pct(ds, 99)
	}
	row := []string{placementType, fmt.Sprintf("%d × %d", len(s.names), templates), fmt.Sprint(s.replicas), fmt.Sprint(objects),
		allObjects.Round(10 * time.Millisecond).String(), allFully.Round(10 * time.Millisecond).String(),
		fmt.Sprintf("%.1f", float64(objects)/allObjects.Seconds()), q50(toObjects), q50(toFully),
		fmt.Sprintf("%.1f", perTemplateReqs), rssCell(largestRSS, sumRSS, len(s.mgrs), peakNote),
		fmt.Sprintf("%.0f / %.0f MiB", heapPeak/(1<<20), heapLast/(1<<20)), deleted.Round(10 * time.Millisecond).String(),
		cpuCell(cost.cpu), loadStart + " → " + loadEnd}
	details := []string{fmt.Sprintf("\n%s: plot %s", placementType, file),
		fmt.Sprintf("%s: host requests per template by controller and verb (create → FullyApplied, %.1f):", placementType, perTemplateReqs)}
	details = append(details, reqLines...)
	details = append(details, fmt.Sprintf("%s: host requests per template by controller and verb (deletion, %.1f):", placementType, delPerTemplate))
	details = append(details, delLines...)
	fmt.Printf("%s: done, all member objects in %s, deleted in %s; plot %s\n", placementType, allObjects.Round(time.Second), deleted.Round(time.Second), file)
	b.ReportMetric(float64(objects)/allObjects.Seconds(), metric+"-objects/s")
	b.ReportMetric(perTemplateReqs, metric+"-host-req/template")
	b.ReportMetric(sum(cost.cpu), metric+"-cpu-s")
	return scaleResult{row: row, details: details, cost: cost}
}

// cleanUp deletes the run's policies and waits (untimed, up to 2 minutes) until its bindings
// are gone, so that the next run starts from an empty namespace.
func (s *scaleSetup) cleanUp(ctx context.Context, b *testing.B, prefix string) {
	if err := s.env.Host.DeleteAllOf(ctx, &policyv1alpha1.PropagationPolicy{}, client.InNamespace(namespace)); err != nil {
		b.Error(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list := &workv1alpha2.ResourceBindingList{}
		if err := s.env.Host.List(ctx, list, client.InNamespace(namespace)); err != nil {
			b.Error(err)
			return
		}
		left := 0
		for _, rb := range list.Items {
			if strings.HasPrefix(rb.Name, prefix) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			fmt.Printf("  %d bindings of %s* still there 2 minutes after their member objects went\n", left, prefix)
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// point is the number of member objects at a time, in seconds since the run started.
type point struct {
	t float64
	n int
}

type objectSampler struct {
	mu     sync.Mutex
	start  time.Time
	count  func() int
	points []point
	stopCh chan struct{}
	done   chan struct{}
}

// sampleObjects counts the run's member objects every scaleSampleEvery, and prints the
// run's progress every scaleProgressEvery.
func (s *scaleSetup) sampleObjects(ctx context.Context, what, prefix string, templates int, start time.Time) *objectSampler {
	o := &objectSampler{start: start, count: func() int { return s.watch.remaining(prefix) },
		stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(scaleSampleEvery)
		defer tick.Stop()
		lastProgress := start
		for {
			n := o.count()
			now := time.Now()
			o.mu.Lock()
			o.points = append(o.points, point{now.Sub(start).Seconds(), n})
			o.mu.Unlock()
			if now.Sub(lastProgress) >= scaleProgressEvery {
				lastProgress = now
				fmt.Printf("  %s %4.0fs: %d member objects, %d of %d bindings FullyApplied, load average %s\n",
					what, now.Sub(start).Seconds(), n, s.watch.fullyCount(prefix), templates, loadAverage())
			}
			select {
			case <-ctx.Done():
				return
			case <-o.stopCh:
				return
			case <-tick.C:
			}
		}
	}()
	return o
}

// stop ends the sampling, with a last sample taken now, and returns the samples.
func (o *objectSampler) stop() []point {
	close(o.stopCh)
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return append(o.points, point{time.Since(o.start).Seconds(), o.count()})
}

// plotObjects writes a PNG of the member objects over time, with dashed lines where the
// last member object appeared, where the last binding became FullyApplied and where the
// deletion began.
func plotObjects(file, title string, series []point, allObjects, allFully, deletion float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the first template was created"
	p.Y.Label.Text = "member objects"
	p.Y.Min = 0
	xys := make(plotter.XYs, len(series))
	top := 1.0
	for i, pt := range series {
		xys[i].X, xys[i].Y = pt.t, float64(pt.n)
		top = max(top, float64(pt.n))
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{B: 200, A: 255}
	line.Width = vg.Points(1.5)
	p.Add(plotter.NewGrid(), line)
	p.Legend.Add("member objects", line)
	for _, m := range []struct {
		what string
		x    float64
		c    color.Color
	}{
		{fmt.Sprintf("all member objects (%.1f s)", allObjects), allObjects, color.RGBA{G: 140, A: 255}},
		{fmt.Sprintf("all bindings FullyApplied (%.1f s)", allFully), allFully, color.RGBA{R: 220, G: 140, A: 255}},
		{fmt.Sprintf("deletion starts (%.1f s)", deletion), deletion, color.RGBA{R: 200, A: 255}},
	} {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: top}})
		if err != nil {
			return err
		}
		l.Color = m.c
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(m.what, l)
	}
	p.Y.Max = 1.3 * top // room for the legend above the curve
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks, plainTicks
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.Padding = vg.Points(2)
	return p.Save(9*vg.Inch, 4.5*vg.Inch, file)
}

// plainTicks are gonum's default ticks labelled as the numbers they are (250, not 250.00).
var plainTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
})

// loadAverage is the 1-, 5- and 15-minute load average of the machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
