// Package soak is a chaos soak of Flotilla on a local fleet: a host with its own
// kube-controller-manager and three apiserver-only members, and the manager binary running
// as its ServiceAccount in a separate process. A seeded random loop creates, edits and
// deletes templates (Deployments, ConfigMaps, Services), PropagationPolicies (some naming one
// template, which preempt; some with preserveResourcesOnDeletion, some propagating the
// ConfigMaps Deployments take env from), ClusterPropagationPolicies, OverridePolicies and
// ClusterOverridePolicies in three opted-in namespaces, while
// SIGKILLing the manager, stopping member apiservers, rotating member tokens and opting
// namespaces out and in. Then it restores everything, waits for quiet and checks that the
// members hold exactly what the templates, policies and overrides say, that every binding is
// FullyApplied, that nothing is stuck on a finalizer and that no Work points at a missing
// Cluster.
//
// Modes (modes_test.go) make the managers three sharded replicas (-soak.shards), the leader
// or a standby SIGKILLed; member2 a Pull member whose agent the chaos kills too (-soak.pull);
// and the members full clusters whose kube-controller-manager keeps writing status
// (-soak.churn).
//
// `go test ./test/soak/` (part of `make test`, skipped with -short) runs a short soak of
// about 90 seconds of chaos, sharded; `make soak` runs the long one (-soak.long, 10 minutes
// unless -soak.duration or FLOTILLA_SOAK_DURATION says otherwise; SOAK_PROFILE=full for every
// mode). -soak.seed replays a run.
package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

var (
	flagLong     = flag.Bool("soak.long", false, "run the long soak (make soak): -soak.duration of chaos instead of the short 90 seconds")
	flagDuration = flag.Duration("soak.duration", 10*time.Minute, "chaos duration of the long soak (also FLOTILLA_SOAK_DURATION, e.g. 30m or 30); setting it selects the long soak")
	flagSeed     = flag.Uint64("soak.seed", 0, "random seed; 0 picks one (printed, to replay a run)")
	flagConverge = flag.Duration("soak.converge", 0, "how long the fleet gets to converge after the chaos (default 90s short, 3m long)")
	flagKeep     = flag.Bool("soak.keep", false, "keep the run directory (logs, journal) even when the soak passes")
	flagLogLevel = flag.String("soak.log-level", "", "the manager's --zap-log-level (debug logs each Work's apply; the default is the manager's, info)")
)

const shortDuration = 90 * time.Second

type config struct {
	long                                 bool
	duration                             time.Duration
	kills, memberRestarts, rotations     int
	relabels, rejoins                    int
	minTemplates, maxTemplates           int
	checkpointEvery, checkpointTimeout   time.Duration
	checkpointStuck                      time.Duration
	maxLongWaits                         int
	opPauseMin, opPauseMax               time.Duration
	initialTemplatesPerNS                int
	initialSettle, readyTimeout, restore time.Duration
	converge                             time.Duration
	// The modes (see modes_test.go).
	shards      int
	pull, churn bool
	agentKills  int
}

// durationFromEnv reads FLOTILLA_SOAK_DURATION: a Go duration, or a number of minutes.
func durationFromEnv() (time.Duration, bool, error) {
	v := strings.TrimSpace(os.Getenv("FLOTILLA_SOAK_DURATION"))
	if v == "" {
		return 0, false, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(n * float64(time.Minute)), true, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false, fmt.Errorf("FLOTILLA_SOAK_DURATION=%q: want a duration (30m) or minutes (30)", v)
	}
	return d, true, nil
}

func configure() (config, error) {
	c := config{duration: shortDuration, long: *flagLong}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "soak.duration" {
			c.long = true
		}
	})
	if c.long {
		c.duration = *flagDuration
	}
	if d, ok, err := durationFromEnv(); err != nil {
		return c, err
	} else if ok {
		c.long, c.duration = true, d
	}
	if c.duration <= 0 {
		return c, errors.New("the soak duration must be positive")
	}
	per := func(every time.Duration, min int) int { return max(min, int(c.duration/every)) }
	// At least 3 kills in the short run, at least 20 in ten minutes.
	c.kills = per(22*time.Second, 3)
	c.memberRestarts = per(75*time.Second, 2)
	c.rotations = per(60*time.Second, 2)
	c.relabels = per(60*time.Second, 2)
	c.rejoins = per(120*time.Second, 1)
	c.minTemplates, c.maxTemplates = 10, 36
	c.initialTemplatesPerNS = 5
	if c.long {
		c.maxTemplates = 80
	}
	// A checkpoint waits checkpointTimeout, then (maxLongWaits times a run) up to
	// checkpointStuck: a generous convergence deadline, as after the chaos.
	c.checkpointEvery, c.checkpointTimeout, c.checkpointStuck, c.maxLongWaits = 30*time.Second, 15*time.Second, time.Minute, 1
	if c.long {
		c.maxLongWaits = 5
	}
	c.opPauseMin, c.opPauseMax = 100*time.Millisecond, 500*time.Millisecond
	c.initialSettle, c.readyTimeout, c.restore = time.Minute, 2*time.Minute, 2*time.Minute
	// Generous next to the usual second or two; short enough that a failing short run stays
	// within about 4 minutes.
	c.converge = 90 * time.Second
	if c.long {
		c.converge = 3 * time.Minute
	}
	if *flagConverge > 0 {
		c.converge = *flagConverge
	}
	configureModes(&c)
	return c, nil
}

// soaker runs one soak.
type soaker struct {
	t    *testing.T
	ctx  context.Context
	cfg  config
	seed uint64
	dir  string

	env  *framework.Env
	host client.Client
	// mgrs are the manager processes: one, or the sharded replicas; agent is the Pull
	// member's agent (nil without -soak.pull).
	mgrs  []*managerProc
	agent *managerProc
	m     *model
	rng   *rand.Rand // workload ops
	erng  *rand.Rand // disruption schedule

	journalW   io.Writer
	chaosStart time.Time
	paused     time.Duration // checkpoints: not chaos time

	downMu   sync.Mutex
	down     string // the member whose apiserver is down, or that is unjoined, if any
	restarts sync.WaitGroup
	infraErr []string // failures of the harness's own disruptions

	ops              map[string]int
	kills            int
	memberRestarts   int
	memberDowntime   time.Duration
	rotations        int
	relabels         int
	rejoins          int
	rejoinTime       time.Duration // from each unjoin's start to its join's end
	checkpoints      int
	checkpointsClean int
	initialConverge  string
	// stalls are what checkpoints found wrong after checkpointTimeout but right before
	// checkpointStuck: slow, not failures, but clues. stuck is what was still wrong then:
	// violations (a later manager restart may well have repaired them).
	stalls, stuck []string
	stuckSeen     map[string]bool
	longWaits     int

	followUps []deferred
	// pending are the processes killed whose restart is queued.
	pending                   map[*managerProc]bool
	leaderKills, standbyKills int // of kills, with sharding
	agentKills                int
	// What checkShards read: shard intervals of the replicas, and Work applies (debug logs).
	shardIntervals, shardApplies int
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet and runs minutes of chaos")
	}
	cfg, err := configure()
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard()) // join's clients would complain that no logger is set
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	mode := "short"
	replay := fmt.Sprintf("go test ./test/soak/ -run TestSoak -v -soak.seed=%d", seed)
	if cfg.long {
		mode = "long"
		replay = fmt.Sprintf("go test ./test/soak/ -run TestSoak -v -timeout 0 -soak.seed=%d -soak.duration=%s", seed, cfg.duration)
	}
	replay += cfg.modeFlags()
	t.Logf("soak: seed %d, %s run, %s of chaos, %s; replay with: %s", seed, mode, cfg.duration, cfg.modes(), replay)

	dir, err := os.MkdirTemp("", fmt.Sprintf("flotilla-soak-%d-", seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The binaries are never worth keeping.
		_ = os.Remove(filepath.Join(dir, "manager"))
		_ = os.Remove(filepath.Join(dir, "agent"))
		if t.Failed() || *flagKeep {
			t.Logf("soak: logs, journal and manager logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	journal, err := os.Create(filepath.Join(dir, "journal.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { journal.Close() })
	fmt.Fprintf(journal, "# soak seed %d, %s of chaos, %s. Columns: chaos clock (checkpoint pauses left out; the\n# disruption schedule uses it), wall clock since the chaos began, what was done.\n", seed, cfg.duration, cfg.modes())

	ctx, cancel := context.WithTimeout(context.Background(), cfg.duration+20*time.Minute)
	defer cancel()
	s := &soaker{t: t, ctx: ctx, cfg: cfg, seed: seed, dir: dir, journalW: journal,
		rng: rand.New(rand.NewPCG(seed, 1)), erng: rand.New(rand.NewPCG(seed, 2)), ops: map[string]int{}, stuckSeen: map[string]bool{},
		pending: map[*managerProc]bool{}}
	s.setUp()
	s.populate()
	s.chaos()
	s.restoreAndVerify()
}

func (s *soaker) journal(format string, args ...any) {
	var at, wall time.Duration
	if !s.chaosStart.IsZero() {
		wall = time.Since(s.chaosStart)
		at = wall - s.paused
	}
	// The chaos clock (scheduled disruptions use it), then the wall clock since the chaos began.
	fmt.Fprintf(s.journalW, "%9.3fs %9.3fs  %s\n", at.Seconds(), wall.Seconds(), fmt.Sprintf(format, args...))
}

// must runs a host write, retrying transient errors: the host is never disrupted, so a
// write that keeps failing is a harness failure.
func (s *soaker) must(what string, f func(ctx context.Context) error) {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
		err = f(ctx)
		cancel()
		if err == nil {
			return
		}
		if s.ctx.Err() != nil {
			break
		}
		if !apierrors.IsConflict(err) {
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
	}
	s.t.Fatalf("soak harness: %s: %v", what, err)
}

// setUp starts the fleet, builds and starts the manager, and joins the members.
func (s *soaker) setUp() {
	t := s.t
	began := time.Now()
	fleetLog, err := os.Create(filepath.Join(s.dir, "fleet.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fleetLog.Close() })

	var bin, agentBin string
	var buildErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		bin, buildErr = buildManager(s.ctx)
		if buildErr == nil && s.cfg.pull {
			agentBin, buildErr = buildAgent(s.ctx)
		}
	}()
	// With status churn the members are full clusters, as the e2e's.
	env, err := framework.StartFleetWith(s.ctx, localcluster.Options{ControllerManager: true}, localcluster.DefaultMembers(len(memberNames), s.cfg.churn), fleetLog)
	<-built
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Fleet.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	// Runs before the fleet stops: no apiserver restart may be under way then.
	t.Cleanup(s.restarts.Wait)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	s.env, s.host = env, env.Host
	kubeconfig, err := env.ManagerKubeconfig(s.ctx, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.newManagers(bin, kubeconfig)
	for _, p := range s.mgrs {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.stop)
	}
	for _, m := range memberNames {
		if s.cfg.pull && m == pullMember {
			continue
		}
		if err := env.Join(s.ctx, m); err != nil {
			t.Fatalf("joining %s: %v", m, err)
		}
	}
	if s.cfg.pull {
		// Stopped before the managers (cleanups run last first), and before the fleet.
		if err := s.startAgent(agentBin); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.agent.stop)
	}
	if err := s.waitClustersReady(s.cfg.readyTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak: fleet up (%s), managers running, %d members joined and Ready in %s", s.cfg.modes(), len(memberNames), time.Since(began).Round(time.Second))
}

func (s *soaker) waitClustersReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var notReady []string
		for _, m := range memberNames {
			c := &clusterv1alpha1.Cluster{}
			if err := s.host.Get(s.ctx, types.NamespacedName{Name: m}, c); err != nil {
				notReady = append(notReady, fmt.Sprintf("%s (%v)", m, err))
				continue
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady) {
				notReady = append(notReady, fmt.Sprintf("%s (%s)", m, condString(meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady))))
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			return fmt.Errorf("Clusters not Ready after %s: %s", timeout, strings.Join(notReady, ", "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var soakNamespaces = []string{"soak-a", "soak-b", "soak-c"}

// populate creates the namespaces, a first set of policies, templates and an override, and
// waits until they are propagated: the baseline.
func (s *soaker) populate() {
	s.m = newModel(soakNamespaces, []string{"g1", "g2", "g3"}, []string{"c1", "c2"})
	for _, ns := range soakNamespaces {
		s.must("create namespace "+ns, func(ctx context.Context) error {
			err := s.host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		// g1 and g2 have PropagationPolicies (g1's propagate dependencies), g3 waits for one.
		for _, g := range []string{"g1", "g2"} {
			p := &policy{ns: ns, group: g, clusters: randomClusters(s.rng), mode: randomMode(s.rng), deps: g == "g1"}
			s.writePolicy(p, true)
			s.journal("create %s clusters=%v mode=%q propagateDeps=%t", p, p.clusters, p.mode, p.deps)
		}
		for range s.cfg.initialTemplatesPerNS {
			t := s.newTemplate(ns)
			s.must("create "+t.key.String(), func(ctx context.Context) error { return s.host.Create(ctx, t.object()) })
			s.m.addTemplate(t)
			s.journal("create %s group=%s %s", t.key, t.group, t.describe())
		}
	}
	// c1 has a ClusterPropagationPolicy, c2 waits for one.
	cpp := &policy{cluster: true, group: "c1", clusters: randomClusters(s.rng), mode: randomMode(s.rng)}
	s.writePolicy(cpp, true)
	s.journal("create %s clusters=%v mode=%q", cpp, cpp.clusters, cpp.mode)
	o := &override{ns: soakNamespaces[0], name: "ol-0", clusters: []string{"member1", "member3"}}
	s.writeOverride(o, true)
	s.journal("create labels %s group=%q clusters=%v", o, o.group, o.clusters)
	co := &override{cluster: true, name: "col-0", clusters: []string{"member2"}}
	s.writeOverride(co, true)
	s.journal("create labels %s group=%q clusters=%v", co, co.group, co.clusters)

	began := time.Now()
	ok, res := s.settle(s.cfg.initialSettle)
	if ok {
		s.initialConverge = time.Since(began).Round(100 * time.Millisecond).String()
	} else {
		s.initialConverge = "not within " + s.cfg.initialSettle.String()
		s.t.Logf("soak: the initial state did not converge within %s; still wrong:\n  %s", s.cfg.initialSettle,
			strings.Join(res.messages(), "\n  "))
	}
	s.t.Logf("soak: baseline of %d templates, %d policies, %d overrides: converged %s", len(s.m.templates), len(s.m.policies),
		len(s.m.overrides), s.initialConverge)
}

// settle polls the checker until every template is as expected or the timeout passes, then
// records a checkpoint for the templates that were (see model.settled). It reports whether
// all were.
func (s *soaker) settle(timeout time.Duration) (bool, *result) {
	deadline := time.Now().Add(timeout)
	var res *result
	for {
		snap, err := take(s.ctx, s.host, s.env.Members, soakNamespaces)
		if err == nil {
			res = check(s.m, snap)
			if len(res.violations) == 0 {
				break
			}
		}
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if res == nil {
		return false, &result{}
	}
	for _, v := range res.violations {
		if v.key == nil {
			return false, res // something global is off: settle nothing
		}
	}
	bad := res.dirtyKeys()
	for _, t := range s.m.templates {
		if !bad[t.key] {
			s.m.settled(t, res.extras[t.key])
		}
	}
	return len(res.violations) == 0, res
}

// disruption is one scheduled chaos event.
type disruption struct {
	at     time.Duration
	kind   string
	target int // member or namespace index
	length time.Duration
}

const (
	evKill    = "kill manager"
	evRestart = "restart member apiserver"
	evRotate  = "rotate member token"
	evRelabel = "opt namespace out and in"
	evRejoin  = "unjoin member and join it again"
	evAgent   = "kill Pull agent"
)

// schedule draws the disruptions: each kind its count, at uniform random times between 5%
// and 85% of the chaos, so a seed replays the same schedule. The last 15% is calm (only
// template and policy changes, the manager steady): a manager restart re-renders
// everything, which would hide changes that a running manager misses.
func (s *soaker) schedule() []disruption {
	var out []disruption
	add := func(kind string, n int, length func() time.Duration, targets int) {
		for range n {
			at := time.Duration((0.05 + 0.8*s.erng.Float64()) * float64(s.cfg.duration))
			out = append(out, disruption{at: at, kind: kind, target: s.erng.IntN(targets), length: length()})
		}
	}
	between := func(a, b time.Duration) func() time.Duration {
		return func() time.Duration { return a + time.Duration(s.erng.Int64N(int64(b-a))) }
	}
	// With sharding, an even target kills the leader, an odd one a standby.
	add(evKill, s.cfg.kills, between(0, 3*time.Second), 4)
	add(evRestart, s.cfg.memberRestarts, between(2*time.Second, 6*time.Second), len(memberNames))
	add(evRotate, s.cfg.rotations, between(0, time.Millisecond), len(memberNames))
	add(evRelabel, s.cfg.relabels, between(2*time.Second, 10*time.Second), len(soakNamespaces))
	add(evRejoin, s.cfg.rejoins, between(0, 5*time.Second), len(memberNames))
	// Drawn last: without -soak.pull the schedule is what it was.
	add(evAgent, s.cfg.agentKills, between(0, 5*time.Second), 1)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

func (s *soaker) chaos() {
	events := s.schedule()
	for _, e := range events {
		s.journal("scheduled at %s: %s (target %d, length %s)", e.at.Round(time.Millisecond), e.kind, e.target, e.length.Round(time.Millisecond))
	}
	s.chaosStart = time.Now()
	s.t.Logf("soak: chaos for %s: %d manager kills, %d member apiserver restarts, %d token rotations, %d namespace opt-outs, %d unjoins and joins, %d agent kills scheduled",
		s.cfg.duration, s.cfg.kills, s.cfg.memberRestarts, s.cfg.rotations, s.cfg.relabels, s.cfg.rejoins, s.cfg.agentKills)
	nextCheckpoint := s.cfg.checkpointEvery
	nextProgress := 30 * time.Second
	for {
		// The chaos clock leaves out checkpoint pauses, so every scheduled disruption runs.
		now := time.Since(s.chaosStart) - s.paused
		if now >= s.cfg.duration || s.ctx.Err() != nil {
			break
		}
		s.runFollowUps(false)
		// Crashed on its own: recorded by running(); bring it back.
		s.restartDown()
		for len(events) > 0 && events[0].at <= now {
			e := events[0]
			events = events[1:]
			if later, postpone := s.disrupt(e); postpone {
				e.at = now + later
				events = insert(events, e)
			}
		}
		if op := s.randomOp(); op != "" {
			s.ops[op]++
		}
		if now >= nextCheckpoint {
			nextCheckpoint = now + s.cfg.checkpointEvery
			began := time.Now()
			if !s.checkpoint() {
				nextCheckpoint = now + 3*time.Second // try again soon
			}
			s.paused += time.Since(began)
		}
		if now >= nextProgress {
			nextProgress += 30 * time.Second
			s.t.Logf("soak: %s of chaos: %d ops, %d kills, %d member restarts, %d rotations, %d opt-outs, %d rejoins, %d templates",
				now.Round(time.Second), s.opCount(), s.kills, s.memberRestarts, s.rotations, s.relabels, s.rejoins, len(s.m.templates))
		}
		pause := s.cfg.opPauseMin + time.Duration(s.rng.Int64N(int64(s.cfg.opPauseMax-s.cfg.opPauseMin)))
		time.Sleep(pause)
	}
	for _, e := range events {
		s.journal("not run, chaos over: %s", e.kind)
	}
	s.journal("chaos over")
}

func (s *soaker) opCount() int {
	n := 0
	for _, c := range s.ops {
		n += c
	}
	return n
}

func insert(events []disruption, e disruption) []disruption {
	i := sort.Search(len(events), func(i int) bool { return events[i].at > e.at })
	events = append(events, disruption{})
	copy(events[i+1:], events[i:])
	events[i] = e
	return events
}

// disrupt runs one event; it asks for a postponement when its target is busy. Follow-ups
// (the manager's restart, a namespace's opt-in) are queued with later.
func (s *soaker) disrupt(e disruption) (time.Duration, bool) {
	switch e.kind {
	case evKill:
		return s.killManager(e)
	case evAgent:
		return s.killAgent(e)
	case evRestart, evRejoin:
		// One member is disrupted at a time.
		s.downMu.Lock()
		busy := s.down != ""
		s.downMu.Unlock()
		if busy {
			return 5 * time.Second, true
		}
		if e.kind == evRestart {
			s.restartMember(memberNames[e.target], e.length)
		} else {
			s.rejoin(s.pushMember(e.target, ""), e.length)
		}
	case evRotate:
		s.downMu.Lock()
		name := s.pushMember(e.target, s.down)
		s.downMu.Unlock()
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		err := s.env.Join(ctx, name)
		cancel()
		if err != nil {
			s.downMu.Lock()
			s.infraErr = append(s.infraErr, fmt.Sprintf("rotating the token of %s: %v", name, err))
			s.downMu.Unlock()
			s.journal("rotate token of %s FAILED: %v", name, err)
			break
		}
		s.rotations++
		s.journal("rotate token of %s (join again)", name)
	case evRelabel:
		var ns *namespace
		for i := range soakNamespaces {
			if n := s.m.namespaces[(e.target+i)%len(soakNamespaces)]; n.labelled {
				ns = n
				break
			}
		}
		if ns == nil {
			return 5 * time.Second, true
		}
		s.setOptIn(ns.name, false)
		s.relabels++
		s.journal("opt namespace %s out for %s", ns.name, e.length.Round(time.Millisecond))
		s.later(e.length, func() { s.setOptIn(ns.name, true) })
	}
	return 0, false
}

// deferred is a follow-up of a disruption, run by the chaos loop (the only goroutine that
// touches the model).
type deferred struct {
	at time.Time
	f  func()
}

// later queues f to run from the chaos loop after d.
func (s *soaker) later(d time.Duration, f func()) {
	s.followUps = append(s.followUps, deferred{at: time.Now().Add(d), f: f})
}

// runFollowUps runs the follow-ups that are due (all of them with force).
func (s *soaker) runFollowUps(force bool) {
	var rest []deferred
	for _, d := range s.followUps {
		if force || !time.Now().Before(d.at) {
			d.f()
		} else {
			rest = append(rest, d)
		}
	}
	s.followUps = rest
}

func (s *soaker) setOptIn(ns string, in bool) {
	var value any
	if in {
		value = wellknown.PropagationEnabled
	}
	data := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, wellknown.PropagationLabel, jsonValue(value))
	s.must("label namespace "+ns, func(ctx context.Context) error {
		return s.host.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, data))
	})
	s.m.setLabelled(ns, in)
	if in {
		s.journal("opt namespace %s in", ns)
	}
}

func jsonValue(v any) string {
	if v == nil {
		return "null"
	}
	return strconv.Quote(v.(string))
}

// restartMember stops a member's apiserver, and starts it again after down, in the
// background: the chaos goes on meanwhile.
func (s *soaker) restartMember(name string, down time.Duration) {
	s.memberRestarts++
	s.journal("stop %s apiserver for %s", name, down.Round(time.Millisecond))
	c := s.env.Fleet.Member(name)
	s.disruptMember(name, &s.memberDowntime, func(ctx context.Context) (errs []string) {
		if err := c.StopAPIServer(); err != nil {
			errs = append(errs, fmt.Sprintf("stopping %s's apiserver: %v", name, err))
		}
		time.Sleep(down)
		if err := c.StartAPIServer(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("starting %s's apiserver: %v", name, err))
		}
		return errs
	})
}

// rejoin unjoins a member (its Cluster deleted, its Works and member objects cleaned up, its
// credentials removed) and joins it again after away, in the background: the chaos goes on
// meanwhile. Policies naming it place nothing there while it is away (a divided workload
// only there waits, unschedulable) and place it again once it is back.
func (s *soaker) rejoin(name string, away time.Duration) {
	s.rejoins++
	s.journal("unjoin %s, join it again %s after", name, away.Round(time.Millisecond))
	s.disruptMember(name, &s.rejoinTime, func(ctx context.Context) (errs []string) {
		// Unjoin waits for the Cluster to go, which needs a manager: one killed meanwhile
		// comes back within seconds.
		if _, err := join.Unjoin(ctx, join.UnjoinOptions{Name: name, Host: s.env.Fleet.Host.RESTConfig(),
			Member: s.env.Fleet.Member(name).RESTConfig()}); err != nil {
			errs = append(errs, fmt.Sprintf("unjoining %s: %v", name, err))
		}
		time.Sleep(away)
		if err := s.env.Join(ctx, name); err != nil {
			errs = append(errs, fmt.Sprintf("joining %s again: %v", name, err))
		}
		return errs
	})
}

// disruptMember marks name as the disrupted member (checkpoints wait, no other member
// disruption starts) while disrupt runs in the background (at most 3 minutes), then adds
// its time to *spent and its failures to the harness's.
func (s *soaker) disruptMember(name string, spent *time.Duration, disrupt func(ctx context.Context) []string) {
	s.downMu.Lock()
	s.down = name
	s.downMu.Unlock()
	s.restarts.Add(1)
	go func() {
		defer s.restarts.Done()
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		errs := disrupt(ctx)
		s.downMu.Lock()
		s.down = ""
		*spent += time.Since(began)
		s.infraErr = append(s.infraErr, errs...)
		s.downMu.Unlock()
	}()
}

// checkpoint pauses the chaos to let the fleet settle (bounded), so that the orphan
// bookkeeping of settled templates starts afresh. Skipped (false) while anything is
// disrupted.
func (s *soaker) checkpoint() bool {
	s.downMu.Lock()
	down := s.down
	s.downMu.Unlock()
	unlabelled := false
	for _, n := range s.m.namespaces {
		unlabelled = unlabelled || !n.labelled
	}
	if settled := s.procsSettled(); down != "" || unlabelled || !settled {
		s.journal("checkpoint skipped (member down %q, namespace opted out %v, managers and agent up for long enough %v)", down, unlabelled, settled)
		return false
	}
	s.checkpoints++
	began := time.Now()
	at := (time.Since(s.chaosStart) - s.paused).Round(time.Second)
	ok, res := s.settle(s.cfg.checkpointTimeout)
	if !ok {
		// Give it as long as a stuck state needs to be told from a slow one, still with
		// nothing disrupted: what is wrong after that is a violation, as after the chaos.
		first := res.messages()
		known := true
		for _, v := range first {
			s.journal("  not settled after %s: %s", s.cfg.checkpointTimeout, v)
			known = known && s.stuckSeen[v]
		}
		if known || s.longWaits >= s.cfg.maxLongWaits {
			// Nothing new, or enough time spent waiting: the run fails already.
			s.journal("checkpoint %d: not waiting longer (already reported stuck: %v)", s.checkpoints, known)
			return true
		}
		s.longWaits++
		ok, res = s.settle(s.cfg.checkpointStuck - s.cfg.checkpointTimeout)
		if ok {
			for _, v := range first {
				s.stalls = append(s.stalls, fmt.Sprintf("checkpoint %d at %s, settled after %s: %s", s.checkpoints, at,
					time.Since(began).Round(time.Second), v))
			}
		} else {
			for _, v := range res.messages() {
				s.stuckSeen[v] = true
				s.stuck = append(s.stuck, fmt.Sprintf("checkpoint %d at %s of chaos, still wrong after %s with the manager up and nothing disrupted: %s",
					s.checkpoints, at, time.Since(began).Round(time.Second), v))
				s.journal("  STUCK: %s", v)
			}
			// What the manager's workers are doing tells a worker held up from one never asked.
			for _, p := range s.mgrs {
				if path, err := p.goroutines(); err != nil {
					s.journal("  no goroutine dump of %s: %v", p.label, err)
				} else {
					s.journal("  goroutines of %s: %s", p.label, path)
				}
			}
		}
	}
	if ok {
		s.checkpointsClean++
	}
	s.journal("checkpoint %d: settled %v in %s (%d templates)", s.checkpoints, ok, time.Since(began).Round(100*time.Millisecond), len(s.m.templates))
	return true
}
