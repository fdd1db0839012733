package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// The soak's modes: what the fleet and the manager are, besides the default of one
// unsharded manager and three apiserver-only Push members.
//
//   - Sharded (-soak.shards=N, N > 1): three manager replicas with --leader-elect and
//     --shards=N. The chaos SIGKILLs sometimes the leader (the detector, scheduler and
//     cluster-wide controllers move to a standby) and sometimes a standby (its shards move
//     once their Leases expire); every replica's logs are kept. The short soak (make test)
//     runs sharded unless told otherwise.
//   - Pull (-soak.pull): member2 is registered in Pull mode (a bootstrap token, as
//     `kubectl flotilla token create` and `kubectl flotilla register` do) and its agent runs
//     as a process of its own, SIGKILLed and restarted by the chaos.
//   - Status churn (-soak.churn): the members are full clusters (kube-controller-manager,
//     kube-scheduler and kwok's fake Nodes), so Deployments get ReplicaSets and Pods that
//     become Ready, and their status keeps changing: the manager reflects it into Works,
//     bindings and templates all the time.
var (
	flagShards = flag.Int("soak.shards", 0, "manager shards: 1 runs one unsharded manager; N > 1 runs 3 replicas with --shards=N, the chaos killing the leader or a standby; "+
		"0 (the default) is 6 in the short run and 1 in the long run")
	flagPull  = flag.Bool("soak.pull", false, "make "+pullMember+" a Pull member, its agent a process the chaos kills and restarts")
	flagChurn = flag.Bool("soak.churn", false, "run full members (kube-controller-manager, kube-scheduler, kwok): member objects' status keeps changing")
)

const (
	// replicas is how many manager processes a sharded soak runs.
	replicas = 3
	// pullMember is the member registered in Pull mode with -soak.pull.
	pullMember = "member2"
	// The sharded replicas' leader election and shard Leases, as test/shard has them: short,
	// so that a killed replica's shards move within seconds.
	shardLease, shardRenew, shardRetry = 6 * time.Second, 4 * time.Second, time.Second
)

// configureModes reads the mode flags (and FLOTILLA_SOAK_SHARDS, FLOTILLA_SOAK_PULL,
// FLOTILLA_SOAK_CHURN, set to anything but "" or "0") into c.
func configureModes(c *config) {
	c.shards = *flagShards
	if v := os.Getenv("FLOTILLA_SOAK_SHARDS"); v != "" {
		fmt.Sscanf(v, "%d", &c.shards)
	}
	if c.shards <= 0 {
		c.shards = 1
		if !c.long {
			// The short soak in make test reaches the sharded paths: the cheapest new mode
			// (two more manager processes, no more clusters).
			c.shards = 6
		}
	}
	envOn := func(name string) bool { v := os.Getenv(name); return v != "" && v != "0" }
	c.pull = *flagPull || envOn("FLOTILLA_SOAK_PULL")
	c.churn = *flagChurn || envOn("FLOTILLA_SOAK_CHURN")
	if c.pull {
		c.agentKills = max(2, int(c.duration/(90*time.Second)))
	}
}

func (c config) sharded() bool { return c.shards > 1 }

// modes describes the run's modes, for the log and the summary.
func (c config) modes() string {
	var parts []string
	if c.sharded() {
		parts = append(parts, fmt.Sprintf("%d manager replicas with --shards=%d", replicas, c.shards))
	} else {
		parts = append(parts, "1 unsharded manager")
	}
	if c.pull {
		parts = append(parts, pullMember+" Pull (agent process)")
	}
	if c.churn {
		parts = append(parts, "full members (status churn)")
	} else {
		parts = append(parts, "apiserver-only members")
	}
	return strings.Join(parts, ", ")
}

// modeFlags are the flags that replay the run's modes.
func (c config) modeFlags() string {
	s := fmt.Sprintf(" -soak.shards=%d", c.shards)
	if c.pull {
		s += " -soak.pull"
	}
	if c.churn {
		s += " -soak.churn"
	}
	return s
}

// managerArgs are the arguments of a manager process (replica of label, when sharded).
func (s *soaker) managerArgs(kubeconfig string) []string {
	args := []string{"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--cluster-probe-interval=1s"}
	if !s.cfg.sharded() {
		return append(args, "--leader-elect=false")
	}
	return append(args, "--leader-elect", "--leader-election-namespace="+wellknown.SystemNamespace, fmt.Sprintf("--shards=%d", s.cfg.shards),
		"--leader-elect-lease-duration="+shardLease.String(), "--leader-elect-renew-deadline="+shardRenew.String(),
		"--leader-elect-retry-period="+shardRetry.String(),
		// Nanoseconds: the shard check (checkShards) orders the replicas' log lines.
		"--zap-time-encoding=rfc3339nano")
}

// newManagers makes the manager processes (not started).
func (s *soaker) newManagers(bin, kubeconfig string) {
	if !s.cfg.sharded() {
		s.mgrs = []*managerProc{{bin: bin, label: "manager", args: s.managerArgs(kubeconfig), dir: s.dir, pprof: s.cfg.long, logLevel: *flagLogLevel}}
		return
	}
	for i := range replicas {
		s.mgrs = append(s.mgrs, &managerProc{bin: bin, label: fmt.Sprintf("manager-%c", 'a'+i), args: s.managerArgs(kubeconfig),
			dir: s.dir, pprof: s.cfg.long, logLevel: *flagLogLevel})
	}
}

// procs are every process the soak runs: the managers, then the agent if any.
func (s *soaker) procs() []*managerProc {
	out := append([]*managerProc(nil), s.mgrs...)
	if s.agent != nil {
		out = append(out, s.agent)
	}
	return out
}

// startProc starts a process that is not running (the chaos loop's, or restore's).
func (s *soaker) startProc(p *managerProc) {
	delete(s.pending, p)
	if p.running() {
		return
	}
	if err := p.start(); err != nil {
		s.t.Fatalf("soak harness: starting %s: %v", p.label, err)
	}
	s.journal("start %s (incarnation %d)", p.label, p.starts)
}

// startAll starts every process that is not running.
func (s *soaker) startAll() {
	for _, p := range s.procs() {
		s.startProc(p)
	}
}

// restartDown restarts the processes that exited on their own (running records the crash).
func (s *soaker) restartDown() {
	for _, p := range s.procs() {
		if !s.pending[p] && !p.running() {
			s.startProc(p)
		}
	}
}

// anyDown reports whether a process is down, or killed and waiting for its restart.
func (s *soaker) anyDown() bool {
	for _, p := range s.procs() {
		if s.pending[p] || !p.running() {
			return true
		}
	}
	return false
}

// procsSettled reports whether every process runs and has for long enough that a checkpoint
// is fair: 2 s for a manager (a killed sharded replica's shards move a lease duration, 6 s,
// after its last renewal: within a checkpoint's first wait); 10 s for the Pull agent, which
// waits for its killed incarnation's leader Lease in the member (15 s from its last renewal).
func (s *soaker) procsSettled() bool {
	for _, p := range s.procs() {
		g := 2 * time.Second
		if p == s.agent {
			g = 10 * time.Second
		}
		if s.pending[p] || !p.running() || time.Since(p.startedAt) < g {
			return false
		}
	}
	return true
}

// leader is the running replica that holds the manager's leader election Lease: the one
// whose current incarnation's log says it acquired it; nil when none has (yet).
func (s *soaker) leader() *managerProc {
	var leader *managerProc
	for _, p := range s.mgrs {
		if !p.running() {
			continue
		}
		data, err := os.ReadFile(p.logPath(p.starts))
		if err == nil && strings.Contains(strings.ToLower(string(data)), "successfully acquired lease") {
			leader = p
		}
	}
	return leader
}

// killManager SIGKILLs a manager: with sharding, the leader (target 0) or a standby.
func (s *soaker) killManager(e disruption) (time.Duration, bool) {
	if s.anyDown() {
		return 2 * time.Second, true
	}
	victim, role := s.mgrs[0], "manager"
	if s.cfg.sharded() {
		leader := s.leader()
		if leader == nil {
			return 2 * time.Second, true // an election is under way
		}
		if e.target%2 == 0 {
			victim, role = leader, "leader"
			s.leaderKills++
		} else {
			var standbys []*managerProc
			for _, p := range s.mgrs {
				if p != leader {
					standbys = append(standbys, p)
				}
			}
			victim, role = standbys[(e.target/2)%len(standbys)], "standby"
			s.standbyKills++
		}
	}
	victim.kill()
	s.kills++
	s.pending[victim] = true
	s.journal("SIGKILL %s %s (kill %d), down for %s", role, victim.label, s.kills, e.length.Round(time.Millisecond))
	s.later(e.length, func() { s.startProc(victim) })
	return 0, false
}

// killAgent SIGKILLs the Pull member's agent.
func (s *soaker) killAgent(e disruption) (time.Duration, bool) {
	if s.pending[s.agent] || !s.agent.running() {
		return 2 * time.Second, true
	}
	s.agent.kill()
	s.agentKills++
	s.pending[s.agent] = true
	s.journal("SIGKILL %s (kill %d), down for %s", s.agent.label, s.agentKills, e.length.Round(time.Millisecond))
	s.later(e.length, func() { s.startProc(s.agent) })
	return 0, false
}

// pushMember is the first member from index i on that is a Push member and not disrupted:
// token rotations and unjoins use the Push join (a Pull member has no credentials in the
// host to rotate, and its unjoin is its unregistration: not a disruption the soak makes).
func (s *soaker) pushMember(i int, down string) string {
	for j := range memberNames {
		name := memberNames[(i+j)%len(memberNames)]
		if name != down && !(s.cfg.pull && name == pullMember) {
			return name
		}
	}
	return memberNames[i]
}

// startAgent registers the Pull member and starts its agent.
func (s *soaker) startAgent(bin string) error {
	if _, err := s.env.Register(s.ctx, pullMember); err != nil {
		return fmt.Errorf("registering %s in Pull mode: %w", pullMember, err)
	}
	kubeconfig, err := s.env.AgentKubeconfig(s.ctx, pullMember, s.dir)
	if err != nil {
		return err
	}
	s.agent = &managerProc{bin: bin, label: "agent-" + pullMember, dir: s.dir, logLevel: *flagLogLevel,
		args: []string{"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--heartbeat-interval=1s", "--failure-threshold=5", "--cluster-status-interval=5s"}}
	return s.agent.start()
}

// churnStats counts, over the members, the Deployments in the soak's namespaces, those whose
// status a member's kube-controller-manager has written (observedGeneration set) and their
// ready replicas: proof that status churn reached the fleet.
func (s *soaker) churnStats() string {
	var deploys, written int
	var ready int32
	for _, m := range memberNames {
		for _, ns := range soakNamespaces {
			ds := &appsv1.DeploymentList{}
			ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
			err := s.env.Members[m].List(ctx, ds, client.InNamespace(ns))
			cancel()
			if err != nil {
				return err.Error()
			}
			for _, d := range ds.Items {
				deploys++
				if d.Status.ObservedGeneration > 0 {
					written++
				}
				ready += d.Status.ReadyReplicas
			}
		}
	}
	return fmt.Sprintf("%d of %d with status written, %d ready replicas", written, deploys, ready)
}

// shardLogLine is what the shard check reads of a replica's JSON log line.
type shardLogLine struct {
	TS    time.Time `json:"ts"`
	Msg   string    `json:"msg"`
	Shard *int      `json:"shard"`
	Work  string    `json:"Work"`
}

// shardInterval is a time a replica's incarnation was allowed to work on a shard: from
// "Acquired shard" to "Stopped work on shard" (or "Lost shard"), or to its SIGKILL, or to
// the end of its log.
type shardInterval struct {
	who        string
	shard      int
	start, end time.Time
}

// checkShards checks, from the sharded replicas' logs (as test/shard does), that no shard
// was ever worked on by two replicas at once, and that every Work apply a replica logged
// (--zap-log-level=debug logs them) happened inside one of its intervals of the Work's shard.
// It returns the violations, and how many intervals and applies it read.
func (s *soaker) checkShards() (violations []string, intervals, applies int) {
	byShard := map[int][]shardInterval{}
	type apply struct {
		who  string
		line shardLogLine
	}
	var all []apply
	mine := map[string][]shardInterval{}
	for _, p := range s.mgrs {
		for n := 1; n <= p.starts; n++ {
			who := fmt.Sprintf("%s-%02d", p.label, n)
			f, err := os.Open(p.logPath(n))
			if err != nil {
				violations = append(violations, fmt.Sprintf("harness: reading %s: %v", p.logPath(n), err))
				continue
			}
			var lines []shardLogLine
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for sc.Scan() {
				var l shardLogLine
				if json.Unmarshal(sc.Bytes(), &l) == nil {
					lines = append(lines, l)
				}
			}
			f.Close()
			// An interval still open ends at the incarnation's SIGKILL, now if it runs, or at
			// its last line if it exited on its own (a crash, reported as such).
			end := time.Now()
			if t, ok := p.killedAt[n]; ok {
				end = t
			} else if (n != p.starts || !p.running()) && len(lines) > 0 {
				end = lines[len(lines)-1].TS
			}
			open := map[int]time.Time{}
			for _, l := range lines {
				switch {
				case l.Msg == "Applied the Work's manifests" && l.Work != "":
					all = append(all, apply{who, l})
				case l.Shard == nil:
				case l.Msg == "Acquired shard":
					open[*l.Shard] = l.TS
				case l.Msg == "Stopped work on shard" || l.Msg == "Lost shard":
					if t, ok := open[*l.Shard]; ok {
						iv := shardInterval{who, *l.Shard, t, l.TS}
						byShard[iv.shard], mine[who] = append(byShard[iv.shard], iv), append(mine[who], iv)
						delete(open, *l.Shard)
					}
				}
			}
			for k, t := range open {
				iv := shardInterval{who, k, t, end}
				byShard[k], mine[who] = append(byShard[k], iv), append(mine[who], iv)
			}
		}
	}
	for k := range s.cfg.shards {
		ivs := byShard[k]
		intervals += len(ivs)
		slices.SortFunc(ivs, func(a, b shardInterval) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ivs); i++ {
			if ivs[i].start.Before(ivs[i-1].end) {
				violations = append(violations, fmt.Sprintf("shard %d worked on by two replicas at once: %s from %s, %s from %s to %s", k,
					ivs[i].who, ivs[i].start.Format(time.RFC3339Nano), ivs[i-1].who, ivs[i-1].start.Format(time.RFC3339Nano), ivs[i-1].end.Format(time.RFC3339Nano)))
			}
		}
	}
	for _, a := range all {
		applies++
		k := shard.Of(a.line.Work, s.cfg.shards)
		if !slices.ContainsFunc(mine[a.who], func(iv shardInterval) bool {
			return iv.shard == k && !a.line.TS.Before(iv.start) && !a.line.TS.After(iv.end)
		}) {
			violations = append(violations, fmt.Sprintf("%s applied Work %s (shard %d) at %s, outside its intervals of that shard", a.who, a.line.Work, k, a.line.TS.Format(time.RFC3339Nano)))
		}
	}
	return violations, intervals, applies
}
