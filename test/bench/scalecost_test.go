package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The scale bench's cost figures (issue 41 items 5 and 6): the manager's CPU-seconds from
// /proc (user + system time of the process), its memory per joined member, and sharded
// replicas against one unsharded manager.

const (
	// scaleIdleSettle is how long the manager is left alone after a batch of members turned
	// Ready before its idle cost is measured: past the first status collection.
	scaleIdleSettle = 15 * time.Second
	// scaleIdleWindow is how long its idle CPU is measured: more than one status interval
	// (cluster.DefaultStatusInterval, 30 s), so every member's collection is in it.
	scaleIdleWindow = 40 * time.Second
	// shardTarget is issue 41 item 5's bound: each of the 3 sharded replicas uses at most
	// this share of one unsharded manager's CPU-seconds and peak memory.
	shardTarget = 0.45
)

// cpuSeconds is the CPU time the manager used so far (user + system), in seconds; 0 when
// the process is gone.
func (m *managerProcess) cpuSeconds() float64 { return processCPU(m.cmd.Process.Pid) }

// cpu returns every replica's CPU-seconds so far.
func (ms managers) cpu() []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = m.cpuSeconds()
	}
	return out
}

// peaks returns every replica's peak RSS, in KiB.
func (ms managers) peaks() []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.peakRSS()
	}
	return out
}

// idleSample is the manager's idle cost with some members joined.
type idleSample struct {
	members int
	// rssKiB is its resident memory, heap its live heap after a forced collection (bytes),
	// cpuPerMin its CPU-seconds per minute over scaleIdleWindow. Summed over the replicas.
	rssKiB    int
	heap      float64
	cpuPerMin float64
	// memberRSSKiB and memberCPUPerMin are the joined members' apiservers and etcds
	// together: what bounds the fleet this machine holds.
	memberRSSKiB    int
	memberCPUPerMin float64
}

// scaleFleet starts the fleet and the first managers, and joins the members in batches,
// measuring the managers' idle cost before the first and after each batch (item 6: what a
// member costs the manager, to project larger fleets).
func scaleFleet(ctx context.Context, b *testing.B, n, replicas int) (*framework.Env, managers, []string, []idleSample) {
	env, err := framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(n, false), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Fleet.Stop() })
	mgrs := managers(startManagers(ctx, b, env, replicas))
	b.Cleanup(func() { mgrs.stop() })
	var names []string
	for _, m := range env.Fleet.Members {
		names = append(names, m.Name)
	}
	batches := joinBatches(n)
	var samples []idleSample
	joined := 0
	for _, upTo := range batches {
		for ; joined < upTo; joined++ {
			if err := env.Join(ctx, names[joined]); err != nil {
				b.Fatal(err)
			}
		}
		waitMembersReady(ctx, b, env, names[:joined])
		s := mgrs.idle(ctx, b, env.Fleet.Members[:joined])
		fmt.Printf("  idle with %d members joined: manager RSS %.0f MiB, heap after GC %.0f MiB, %.2f CPU-s/min; members %.0f MiB, %.2f CPU-s/min; load average %s\n",
			joined, float64(s.rssKiB)/1024, s.heap/(1<<20), s.cpuPerMin, float64(s.memberRSSKiB)/1024, s.memberCPUPerMin, loadAverage())
		samples = append(samples, s)
	}
	return env, mgrs, names, samples
}

// joinBatches returns how many members are joined when each idle sample is taken: none,
// then about a third of them at a time.
func joinBatches(n int) []int {
	out := []int{0}
	step := max((n+2)/3, 1)
	for k := step; k < n; k += step {
		out = append(out, k)
	}
	if n > 0 {
		out = append(out, n)
	}
	return out
}

func waitMembersReady(ctx context.Context, b *testing.B, env *framework.Env, names []string) {
	waitEvery(ctx, b, "members Ready", 200*time.Millisecond, func() bool {
		for _, name := range names {
			if !(clusterReady{}).check(ctx, env, name) {
				return false
			}
		}
		return true
	})
}

// idle measures the replicas' idle cost: scaleIdleSettle, then CPU over scaleIdleWindow, then memory.
func (ms managers) idle(ctx context.Context, b *testing.B, members []*localcluster.Cluster) idleSample {
	sleepCtx(ctx, scaleIdleSettle)
	before, membersBefore := ms.cpu(), membersCPU(members)
	sleepCtx(ctx, scaleIdleWindow)
	after, membersAfter := ms.cpu(), membersCPU(members)
	s := idleSample{members: len(members), memberCPUPerMin: (membersAfter - membersBefore) / scaleIdleWindow.Minutes()}
	for _, m := range members {
		for _, p := range m.Processes() {
			if p.Name == "kube-apiserver" || p.Name == "etcd" {
				s.memberRSSKiB += procStatus(fmt.Sprintf("/proc/%d/status", p.PID))["VmRSS"]
			}
		}
	}
	for i, m := range ms {
		s.cpuPerMin += (after[i] - before[i]) / scaleIdleWindow.Minutes()
		s.heap += m.heapAfterGC(b)
		rss, _ := m.rss()
		s.rssKiB += rss
	}
	return s
}

// waitServing waits until every replica serves its metrics and, sharded, until every
// replica holds a shard and all of them together hold every shard (flotilla_shards_held),
// so that a run starts with the work spread.
func (ms managers) waitServing(ctx context.Context, b *testing.B, shards int) {
	waitEvery(ctx, b, "manager replicas serving and holding their shards", 500*time.Millisecond, func() bool {
		held := 0
		for _, m := range ms {
			v, ok := m.tryGauge("flotilla_shards_held")
			if !ok || (len(ms) > 1 && v < 1) {
				return false
			}
			held += int(v)
		}
		return len(ms) == 1 || held == shards
	})
}

// tryGauge is one gauge of the manager's metrics, and false when they cannot be read yet.
func (m *managerProcess) tryGauge(name string) (float64, bool) {
	resp, err := http.Get("http://" + m.metricsAddr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, false
	}
	return metricsSnapshot(mfs).gauge(name), true
}

// membersCPU is the CPU-seconds the members' apiservers and etcds used so far.
func membersCPU(members []*localcluster.Cluster) float64 {
	var s float64
	for _, m := range members {
		for _, p := range m.Processes() {
			if p.Name == "kube-apiserver" || p.Name == "etcd" {
				s += processCPU(p.PID)
			}
		}
	}
	return s
}

func (ms managers) stop() {
	for _, m := range ms {
		m.stop()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// fitLine is the least-squares line y = a + b·x through the points; b is 0 with fewer
// than two distinct x.
func fitLine(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b
}

// perMemberLines is item 6's table: the idle samples, the cost of one member fitted
// through them, and what 100 and 1,000 members would cost by that line.
func perMemberLines(samples []idleSample, runs []runCost) []string {
	if len(samples) == 0 {
		return nil
	}
	var xs, rss, heap, cpu, mrss, mcpu []float64
	rows := [][]string{{"members joined", "manager RSS", "heap after GC", "idle CPU-s / min", "members' apiservers and etcds: RSS", "CPU-s / min"}}
	for _, s := range samples {
		xs = append(xs, float64(s.members))
		rss = append(rss, float64(s.rssKiB)/1024)
		heap = append(heap, s.heap/(1<<20))
		cpu = append(cpu, s.cpuPerMin)
		rows = append(rows, []string{fmt.Sprint(s.members), fmt.Sprintf("%.0f MiB", float64(s.rssKiB)/1024),
			fmt.Sprintf("%.0f MiB", s.heap/(1<<20)), fmt.Sprintf("%.2f", s.cpuPerMin),
			fmt.Sprintf("%.0f MiB", float64(s.memberRSSKiB)/1024), fmt.Sprintf("%.1f", s.memberCPUPerMin)})
		mrss = append(mrss, float64(s.memberRSSKiB)/1024)
		mcpu = append(mcpu, s.memberCPUPerMin)
	}
	ra, rb := fitLine(xs, rss)
	ha, hb := fitLine(xs, heap)
	ca, cb := fitLine(xs, cpu)
	_, mrb := fitLine(xs, mrss)
	_, mcb := fitLine(xs, mcpu)
	rows = append(rows, []string{"per member (least-squares slope)", fmt.Sprintf("%.2f MiB", rb), fmt.Sprintf("%.2f MiB", hb), fmt.Sprintf("%.3f", cb),
		fmt.Sprintf("%.0f MiB", mrb), fmt.Sprintf("%.2f (%.1f%% of a core)", mcb, mcb/60*100)})
	for _, m := range []float64{100, 1000} {
		rows = append(rows, []string{fmt.Sprintf("projected, %.0f members (idle)", m), fmt.Sprintf("%.0f MiB", ra+rb*m),
			fmt.Sprintf("%.0f MiB", ha+hb*m), fmt.Sprintf("%.1f (%.0f%% of a core)", ca+cb*m, (ca+cb*m)/60*100)})
	}
	lines := []string{"", "manager cost per member (issue 41 item 6; idle: " + scaleIdleSettle.String() + " settle, CPU over " + scaleIdleWindow.String() + "):"}
	lines = append(lines, columnLines(rows)...)
	for _, r := range runs {
		if r.replicas != samples[0].replicasOf() {
			continue
		}
		// Under load the manager's cost follows the member objects, not the members.
		lines = append(lines, fmt.Sprintf("%s with %d members: %.1f CPU-s in all (%.3f per member object), peak RSS %.0f MiB",
			r.placement, r.members, sum(r.cpu), sum(r.cpu)/float64(max(r.objects, 1)), float64(maxInt(r.peakKiB))/1024))
	}
	return lines
}

// replicasOf is the replica count the idle samples were taken with: the first managers'.
func (idleSample) replicasOf() int { return firstReplicas }

// firstReplicas is the replica count of the managers the fleet was joined with (set once
// by BenchmarkScale).
var firstReplicas = 1

// runCost is what one run cost each replica.
type runCost struct {
	placement         string
	replicas, members int
	objects           int
	cpu               []float64
	peakKiB           []int
	// leader is the index of the replica that was the elected leader at the run's end (the
	// detector and the cluster-wide controllers run there), or -1.
	leader int
}

// leader returns the index of the replica that reports itself the elected leader
// (controller-runtime's leader_election_master_status), or -1.
func (ms managers) leader() int {
	for i, m := range ms {
		if v, ok := m.tryGauge("leader_election_master_status"); ok && v == 1 {
			return i
		}
	}
	return -1
}

// shardLines is item 5's table: for each placement run both unsharded and sharded, each
// sharded replica's CPU-seconds and peak RSS as a share of the unsharded manager's, against
// shardTarget.
func shardLines(runs []runCost) []string {
	var lines []string
	for _, one := range runs {
		if one.replicas != 1 {
			continue
		}
		for _, r := range runs {
			if r.replicas <= 1 || r.placement != one.placement {
				continue
			}
			rows := [][]string{{"replica", "CPU-s", "share of unsharded", "peak RSS", "share of unsharded", fmt.Sprintf("target ≤ %.0f %%", shardTarget*100)}}
			rows = append(rows, []string{"unsharded", fmt.Sprintf("%.1f", one.cpu[0]), "100 %",
				fmt.Sprintf("%.0f MiB", float64(one.peakKiB[0])/1024), "100 %", ""})
			for i := range r.cpu {
				c, m := r.cpu[i]/one.cpu[0], float64(r.peakKiB[i])/float64(one.peakKiB[0])
				verdict := map[bool]string{true: "met", false: "NOT MET"}
				name := fmt.Sprintf("sharded %d/%d", i+1, len(r.cpu))
				if i == r.leader {
					name += " (leader)"
				}
				rows = append(rows, []string{name, fmt.Sprintf("%.1f", r.cpu[i]),
					fmt.Sprintf("%.0f %%", c*100), fmt.Sprintf("%.0f MiB", float64(r.peakKiB[i])/1024), fmt.Sprintf("%.0f %%", m*100), "CPU " + verdict[c <= shardTarget] + ", memory " + verdict[m <= shardTarget]})
			}
			lines = append(lines, "", fmt.Sprintf("%s, %d members: %d sharded replicas (--shards=%d) against one unsharded manager (issue 41 item 5; CPU-s from create to member objects deleted):",
				r.placement, r.members, r.replicas, 2*r.replicas))
			lines = append(lines, columnLines(rows)...)
			lines = append(lines, fmt.Sprintf("  all %d replicas together: %.1f CPU-s (%.0f %%), %.0f MiB peak RSS (%.0f %%)",
				r.replicas, sum(r.cpu), sum(r.cpu)/one.cpu[0]*100, float64(sumInt(r.peakKiB))/1024, float64(sumInt(r.peakKiB))/float64(one.peakKiB[0])*100))
		}
	}
	return lines
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func sumInt(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// parseReplicas reads FLOTILLA_SCALE_REPLICAS: a replica count, or a comma-separated list
// of them that the runs are repeated with on the same fleet (e.g. "1,3": unsharded, then 3
// sharded replicas).
func parseReplicas(v string) ([]int, error) {
	if v == "" {
		return []int{1}, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("FLOTILLA_SCALE_REPLICAS=%q: want positive replica counts, comma-separated", v)
		}
		out = append(out, n)
	}
	return out, nil
}

// columnLines is printColumns into lines, each indented by two spaces.
func columnLines(rows [][]string) []string {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	var out []string
	for _, r := range rows {
		var sb strings.Builder
		sb.WriteString("  ")
		for i, c := range r {
			sb.WriteString(c + strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)+2))
		}
		out = append(out, strings.TrimRight(sb.String(), " "))
	}
	return out
}

// cpuCell is the CPU column: one replica's CPU-seconds, or the largest replica's and all.
func cpuCell(cpu []float64) string {
	if len(cpu) == 1 {
		return fmt.Sprintf("%.1f", cpu[0])
	}
	return fmt.Sprintf("%.1f / %.1f", slices.Max(cpu), sum(cpu))
}
