package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

const (
	shards        = 6
	templates     = 120
	leaseDuration = 6 * time.Second
	group         = "flotilla-manager"
)

var members = []string{"member1", "member2", "member3"}

// replica is one manager process and its log.
type replica struct {
	name    string
	logPath string
	proc    *framework.Process
	killed  time.Time
}

func startReplica(ctx context.Context, dir, kubeconfig, name string) *replica {
	GinkgoHelper()
	path := filepath.Join(dir, name+".log")
	logf, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(logf.Close)
	p, err := framework.StartManagerProcess(ctx, kubeconfig, logf,
		fmt.Sprintf("--shards=%d", shards), "--leader-elect", "--leader-election-namespace="+wellknown.SystemNamespace,
		fmt.Sprintf("--leader-elect-lease-duration=%s", leaseDuration), "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cluster-probe-interval=1s",
		"--zap-log-level=debug", "--zap-time-encoding=rfc3339nano")
	Expect(err).NotTo(HaveOccurred())
	r := &replica{name: name, logPath: path, proc: p}
	DeferCleanup(func() {
		p.Stop()
		if CurrentSpecReport().Failed() {
			data, _ := os.ReadFile(path)
			AddReportEntry(name+" log (tail)", tail(string(data), 40))
		}
	})
	return r
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logLine is what the test reads from a replica's JSON log.
type logLine struct {
	TS       time.Time `json:"ts"`
	Msg      string    `json:"msg"`
	Shard    *int      `json:"shard"`
	Identity string    `json:"identity"`
	Work     string    `json:"Work"`
}

func (r *replica) lines() []logLine {
	GinkgoHelper()
	f, err := os.Open(r.logPath)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// identity is the replica's shard identity, from its "Sharded manager" line.
func (r *replica) identity() string {
	for _, l := range r.lines() {
		if l.Msg == "Sharded manager" && l.Identity != "" {
			return l.Identity
		}
	}
	return ""
}

// interval is a time a replica was allowed to work on a shard: from its Lease being written
// (then the gate opens) to the gate being closed, which waits for the work inside.
type interval struct {
	replica    string
	shard      int
	start, end time.Time
}

// intervals reads the replica's shard intervals; one still open ends at the kill, or at end.
func (r *replica) intervals(end time.Time) []interval {
	open := map[int]time.Time{}
	var out []interval
	for _, l := range r.lines() {
		if l.Shard == nil {
			continue
		}
		switch l.Msg {
		case "Acquired shard":
			open[*l.Shard] = l.TS
		case "Stopped work on shard", "Lost shard":
			if t, ok := open[*l.Shard]; ok {
				out = append(out, interval{r.name, *l.Shard, t, l.TS})
				delete(open, *l.Shard)
			}
		}
	}
	if !r.killed.IsZero() {
		end = r.killed
	}
	for k, t := range open {
		out = append(out, interval{r.name, k, t, end})
	}
	return out
}

// applies are the Works the replica applied, with when.
func (r *replica) applies() []logLine {
	var out []logLine
	for _, l := range r.lines() {
		if l.Msg == "Applied the Work's manifests" && l.Work != "" {
			out = append(out, l)
		}
	}
	return out
}

// shardHolders returns the holder of each shard Lease ("" when none or expired is not told).
func shardHolders(ctx context.Context, g Gomega) map[int]string {
	leases := &coordinationv1.LeaseList{}
	g.Expect(env.Host.List(ctx, leases, client.InNamespace(wellknown.SystemNamespace),
		client.MatchingLabels{shard.LabelGroup: group, shard.LabelRole: "shard"})).To(Succeed())
	out := map[int]string{}
	for k := range shards {
		for _, l := range leases.Items {
			if l.Name == shard.ShardLease(group, k) && l.Spec.HolderIdentity != nil {
				out[k] = *l.Spec.HolderIdentity
			}
		}
	}
	return out
}

// balancedOver passes once every shard is held by one of the replicas, each holding its share.
func balancedOver(ctx context.Context, rs ...*replica) func(Gomega) {
	return func(g Gomega) {
		var ids []string
		for _, r := range rs {
			id := r.identity()
			g.Expect(id).NotTo(BeEmpty(), "%s has not logged its identity", r.name)
			ids = append(ids, id)
		}
		holders := shardHolders(ctx, g)
		load := map[string]int{}
		for k := range shards {
			g.Expect(ids).To(ContainElement(holders[k]), "shard %d held by %q", k, holders[k])
			load[holders[k]]++
		}
		for _, id := range ids {
			g.Expect(load[id]).To(Equal(shards/len(ids)), "shards held by %s: %v", id, holders)
		}
	}
}

// counts are the watch events seen per object.
type counts struct {
	mu     sync.Mutex
	events map[string]map[watch.EventType]int
}

func (c *counts) add(key string, t watch.EventType) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events[key] == nil {
		c.events[key] = map[watch.EventType]int{}
	}
	c.events[key][t]++
}

func (c *counts) snapshot() map[string]map[watch.EventType]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[watch.EventType]int{}
	for k, v := range c.events {
		out[k] = map[watch.EventType]int{}
		for t, n := range v {
			out[k][t] = n
		}
	}
	return out
}

// unseenWorks are, by member, the templates of which no Work was seen (Works are named
// <template>-<hash>).
func unseenWorks(seen map[string]map[watch.EventType]int) map[string][]string {
	templatesSeen := map[string]bool{}
	for k := range seen {
		if i := strings.LastIndex(k, "-"); i > 0 {
			templatesSeen[k[:i]] = true // member/cm-NNN
		}
	}
	out := map[string][]string{}
	for _, m := range members {
		for i := range templates {
			if name := fmt.Sprintf("cm-%03d", i); !templatesSeen[m+"/"+name] {
				out[m] = append(out[m], name)
			}
		}
	}
	return out
}

// watchInto counts the events of list's kind in ns of the cluster at cfg under prefix/name,
// the objects there already counted as added. The watch resumes from the last event seen
// when the apiserver ends it (a retry watcher): a plain watch stops there, and every object
// made after it went uncounted (57 of 360 Works once, failing the spec).
func watchInto(ctx context.Context, c client.WithWatch, list client.ObjectList, ns, prefix string, into *counts) {
	GinkgoHelper()
	Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	for _, item := range items {
		into.add(prefix+"/"+item.(client.Object).GetName(), watch.Added)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &opts})
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), lw)
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
				into.add(prefix+"/"+o.GetName(), ev.Type)
			}
		}
	}()
}

var _ = Describe("Three sharded replicas", func() {
	It("split the work, hand a killed replica's shards over within the lease duration, and apply every change exactly once", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		kubeconfig, err := env.ManagerKubeconfig(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		rs := []*replica{startReplica(ctx, dir, kubeconfig, "a"), startReplica(ctx, dir, kubeconfig, "b"), startReplica(ctx, dir, kubeconfig, "c")}
		By("the three replicas hold two shards each")
		Eventually(balancedOver(ctx, rs...)).WithContext(ctx).Should(Succeed())
		framework.EventuallyClustersReady(ctx, env.Host, members...)

		ns := "sharded"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}})).To(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members}},
			}})).To(Succeed())

		// Every member ConfigMap and host Work is watched from before the first template:
		// an object created twice, or deleted, shows.
		memberEvents := &counts{events: map[string]map[watch.EventType]int{}}
		workEvents := &counts{events: map[string]map[watch.EventType]int{}}
		watchCtx, stopWatches := context.WithCancel(context.WithoutCancel(ctx))
		DeferCleanup(stopWatches)
		for _, m := range members {
			c, err := client.NewWithWatch(env.Fleet.Member(m).RESTConfig(), client.Options{Scheme: scheme.New()})
			Expect(err).NotTo(HaveOccurred())
			watchInto(watchCtx, c, &corev1.ConfigMapList{}, ns, m, memberEvents)
			hc, err := client.NewWithWatch(env.Fleet.Host.RESTConfig(), client.Options{Scheme: scheme.New()})
			Expect(err).NotTo(HaveOccurred())
			watchInto(watchCtx, hc, &workv1alpha1.WorkList{}, wellknown.ExecutionNamespace(m), m, workEvents)
		}
		onMember := func(m string) int {
			n := 0
			for k, ev := range memberEvents.snapshot() {
				if strings.HasPrefix(k, m+"/") && ev[watch.Added] > 0 {
					n++
				}
			}
			return n
		}

		By("creating templates, and killing the leader once a third of them are on member1")
		leader := leaderOf(ctx, rs)
		var victim *replica
		for i := range templates {
			Expect(env.Host.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%03d", i)},
				Data: map[string]string{"key": "v1"}})).To(Succeed())
			if i == templates/2 {
				Eventually(func() int { return onMember("member1") }).WithContext(ctx).Should(BeNumerically(">=", templates/3))
				victim = leader
				victim.killed = time.Now()
				victim.proc.Kill()
			}
		}
		survivors := slices.DeleteFunc(slices.Clone(rs), func(r *replica) bool { return r == victim })
		victimID := victim.identity()
		var victimShards []int
		for _, iv := range victim.intervals(time.Now()) {
			if iv.end.Equal(victim.killed) {
				victimShards = append(victimShards, iv.shard)
			}
		}
		Expect(victimShards).NotTo(BeEmpty(), "the killed replica held no shard")

		By("the survivors take the killed replica's shards once its Leases expire")
		Eventually(balancedOver(ctx, survivors...)).WithContext(ctx).Should(Succeed())
		var takeover time.Time
		for _, r := range survivors {
			for _, iv := range r.intervals(time.Now()) {
				if slices.Contains(victimShards, iv.shard) && iv.start.After(victim.killed) && iv.start.After(takeover) {
					takeover = iv.start
				}
			}
		}
		handover := takeover.Sub(victim.killed)
		AddReportEntry("handover after a kill", fmt.Sprintf("%s for shards %v of %s (lease duration %s)", handover, victimShards, victimID, leaseDuration))
		GinkgoWriter.Printf("killed replica's shards %v taken over %s after the kill (lease duration %s)\n", victimShards, handover, leaseDuration)
		// The Lease expires a lease duration after its last renewal, which was before the
		// kill; a retry period later at most the new holder notices. Twice the duration
		// leaves room for a loaded machine.
		Expect(handover).To(BeNumerically("<", 2*leaseDuration))

		By("every template reaches every member once")
		expectMemberObjects(ctx, memberEvents, ns, watch.Added, 1, watch.Modified, 0, "v1")

		By("a fourth replica joins: shards are handed over by release, and every change is still applied once")
		d := startReplica(ctx, dir, kubeconfig, "d")
		survivors = append(survivors, d)
		Eventually(balancedOver(ctx, survivors...)).WithContext(ctx).Should(Succeed())
		for i := range templates {
			cm := &corev1.ConfigMap{}
			Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%03d", i)}, cm)).To(Succeed())
			cm.Data["key"] = "v2"
			Expect(env.Host.Update(ctx, cm)).To(Succeed())
		}
		expectMemberObjects(ctx, memberEvents, ns, watch.Added, 1, watch.Modified, 1, "v2")

		By("no Work was created twice or deleted, and no shard was ever worked on by two replicas at once")
		for k, ev := range workEvents.snapshot() {
			Expect(ev[watch.Added]).To(Equal(1), "Work %s created %d times", k, ev[watch.Added])
			Expect(ev[watch.Deleted]).To(BeZero(), "Work %s deleted", k)
		}
		seen := workEvents.snapshot()
		Expect(unseenWorks(seen)).To(BeEmpty(), "templates whose Work the watch never saw, by member")
		Expect(seen).To(HaveLen(templates*len(members)), "Works other than one per template and member")
		checkIntervals(append(survivors, victim))
	}, SpecTimeout(8*time.Minute))
})

// leaderOf returns the replica that holds the manager's leader election Lease: the one whose
// log says it acquired it.
func leaderOf(ctx context.Context, rs []*replica) *replica {
	GinkgoHelper()
	var leader *replica
	Eventually(func(g Gomega) {
		leader = nil
		for _, r := range rs {
			data, err := os.ReadFile(r.logPath)
			g.Expect(err).NotTo(HaveOccurred())
			if strings.Contains(strings.ToLower(string(data)), "successfully acquired lease") {
				leader = r
			}
		}
		g.Expect(leader).NotTo(BeNil())
	}).WithContext(ctx).Should(Succeed())
	return leader
}

// expectMemberObjects waits until every template is on every member with value, then checks
// each member object saw exactly the given number of each event.
func expectMemberObjects(ctx context.Context, ev *counts, ns string, t1 watch.EventType, n1 int, t2 watch.EventType, n2 int, value string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, m := range members {
			cms := &corev1.ConfigMapList{}
			g.Expect(env.Members[m].List(ctx, cms, client.InNamespace(ns))).To(Succeed())
			n := 0
			for _, cm := range cms.Items {
				if cm.Data["key"] == value {
					n++
				}
			}
			g.Expect(n).To(Equal(templates), "ConfigMaps with %q in %s", value, m)
		}
	}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
	// Let late duplicates show, if any.
	time.Sleep(2 * time.Second)
	snap := ev.snapshot()
	Expect(snap).To(HaveLen(templates * len(members)))
	for k, e := range snap {
		Expect(e[t1]).To(Equal(n1), "%s: %v", k, e)
		Expect(e[t2]).To(Equal(n2), "%s: %v", k, e)
		Expect(e[watch.Deleted]).To(BeZero(), "%s deleted", k)
	}
}

// checkIntervals checks the replicas' logs: for each shard, no two replicas' working
// intervals overlap, and every apply a replica logged happened inside one of its intervals
// of the Work's shard.
func checkIntervals(rs []*replica) {
	GinkgoHelper()
	now := time.Now()
	byShard := map[int][]interval{}
	mine := map[string][]interval{}
	for _, r := range rs {
		for _, iv := range r.intervals(now) {
			byShard[iv.shard] = append(byShard[iv.shard], iv)
			mine[r.name] = append(mine[r.name], iv)
		}
	}
	for k, ivs := range byShard {
		slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ivs); i++ {
			Expect(ivs[i].start.Before(ivs[i-1].end)).To(BeFalse(), "shard %d: %s held it from %s, %s from %s to %s",
				k, ivs[i].replica, ivs[i].start.Format(time.RFC3339Nano), ivs[i-1].replica, ivs[i-1].start.Format(time.RFC3339Nano), ivs[i-1].end.Format(time.RFC3339Nano))
		}
	}
	applies := 0
	for _, r := range rs {
		for _, a := range r.applies() {
			applies++
			k := shard.Of(a.Work, shards)
			inside := slices.ContainsFunc(mine[r.name], func(iv interval) bool {
				return iv.shard == k && !a.TS.Before(iv.start) && !a.TS.After(iv.end)
			})
			Expect(inside).To(BeTrue(), "%s applied Work %s (shard %d) at %s outside its intervals", r.name, a.Work, k, a.TS.Format(time.RFC3339Nano))
		}
	}
	// Every Work was applied at least for its creation and its update.
	Expect(applies).To(BeNumerically(">=", 2*templates*len(members)))
	GinkgoWriter.Printf("%d applies by %d replicas, all inside their shards' intervals\n", applies, len(rs))
}
