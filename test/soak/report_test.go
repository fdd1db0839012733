package soak

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// restoreAndVerify ends the chaos: the manager runs, every namespace is opted in, every
// member apiserver is up; then it waits for the fleet to converge, checks the invariants and
// prints the summary.
func (s *soaker) restoreAndVerify() {
	chaosEnd := time.Now()
	s.runFollowUps(true)
	s.startAll()
	s.restarts.Wait()
	for _, n := range s.m.namespaces {
		if !n.labelled {
			s.setOptIn(n.name, true)
		}
	}
	var notes []string
	if err := s.waitClustersReady(s.cfg.restore); err != nil {
		notes = append(notes, err.Error())
	}
	restored := time.Since(chaosEnd)
	s.journal("restored in %s", restored.Round(100*time.Millisecond))

	deadline := time.Now().Add(s.cfg.converge)
	var res *result
	var lastErr error
	converged := time.Duration(-1)
	for {
		snap, err := take(s.ctx, s.host, s.env.Members, soakNamespaces)
		lastErr = err
		if err == nil {
			res = check(s.m, snap)
			if len(res.violations) == 0 {
				converged = time.Since(chaosEnd)
				break
			}
		}
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	var violations []string
	switch {
	case res == nil:
		violations = append(violations, fmt.Sprintf("could not read the fleet: %v", lastErr))
	case converged < 0:
		violations = append(violations, res.messages()...)
	default:
		// Quiet should stay quiet.
		time.Sleep(5 * time.Second)
		snap, err := take(s.ctx, s.host, s.env.Members, soakNamespaces)
		if err != nil {
			violations = append(violations, fmt.Sprintf("could not read the fleet: %v", err))
		} else if again := check(s.m, snap); len(again.violations) > 0 {
			for _, v := range again.messages() {
				violations = append(violations, "after converging, 5 s later: "+v)
			}
		} else {
			res = again
		}
	}
	if converged >= 0 {
		s.canary()
	}
	violations = append(violations, s.stuck...)
	var panics, forbidden []string
	var npanics, nforbidden int
	for _, p := range s.procs() {
		p.running() // records a crash of the last incarnation
		violations = append(violations, p.crashes...)
		lines, n := p.grepLogs(5, "Observed a panic", "panic:")
		panics, npanics = append(panics, lines...), npanics+n
		lines, n = p.grepLogs(3, "forbidden")
		forbidden, nforbidden = append(forbidden, lines...), nforbidden+n
	}
	if s.cfg.sharded() {
		var shardViolations []string
		shardViolations, s.shardIntervals, s.shardApplies = s.checkShards()
		violations = append(violations, shardViolations...)
	}
	if npanics > 0 {
		violations = append(violations, fmt.Sprintf("%d panic lines in the manager (and agent) logs, e.g.:\n      %s", npanics, strings.Join(panics, "\n      ")))
	}
	s.t.Log(s.summary(res, restored, converged, violations, nforbidden))
	if nforbidden > 0 {
		s.t.Logf("soak: %d manager (and agent) log lines mention \"forbidden\" (RBAC?), e.g.:\n  %s", nforbidden, strings.Join(forbidden, "\n  "))
	}
	for _, n := range notes {
		s.t.Logf("soak: %s", n)
	}
	if len(s.infraErr) > 0 {
		s.t.Errorf("soak harness: %d disruptions failed:\n  %s", len(s.infraErr), strings.Join(s.infraErr, "\n  "))
	}
	if len(violations) > 0 {
		s.t.Fatalf("soak: %d invariant violations after %s of chaos (seed %d); see the summary above. Journal: %s",
			len(violations), s.cfg.duration, s.seed, s.dir+"/journal.log")
	}
}

func (s *soaker) summary(res *result, restored, converged time.Duration, violations []string, forbidden int) string {
	var b strings.Builder
	row := func(name string, value any) { fmt.Fprintf(&b, "  %-48s %v\n", name, value) }
	mode := "short"
	if s.cfg.long {
		mode = "long"
	}
	fmt.Fprintf(&b, "\nFlotilla soak summary: seed %d, %s run, %s of chaos, %d members, namespaces %s\n  modes: %s\n",
		s.seed, mode, s.cfg.duration, len(memberNames), strings.Join(soakNamespaces, ", "), s.cfg.modes())
	fmt.Fprintf(&b, "  %-48s %s\n", "operation", "count")
	total := 0
	for _, op := range workloadOps {
		row(op.name, s.ops[op.name])
		total += s.ops[op.name]
	}
	row("all template/policy/override operations", total)
	if s.cfg.sharded() {
		row("manager SIGKILLs (and restarts): leader / standby", fmt.Sprintf("%d: %d / %d", s.kills, s.leaderKills, s.standbyKills))
	} else {
		row("manager SIGKILLs (and restarts)", s.kills)
	}
	if s.cfg.sharded() {
		row("shard intervals, Work applies checked (no overlap)", fmt.Sprintf("%d, %d", s.shardIntervals, s.shardApplies))
	}
	starts, crashes := 0, 0
	for _, p := range s.mgrs {
		starts, crashes = starts+p.starts, crashes+len(p.crashes)
	}
	row("manager incarnations", starts)
	row("manager crashes (exits not ours)", crashes)
	if s.cfg.sharded() {
		var lost []string
		for _, p := range s.mgrs {
			lost = append(lost, p.lostLeases...)
		}
		row("manager exits on a lost leader Lease (restarted)", fmt.Sprintf("%d %v", len(lost), lost))
	}
	if s.agent != nil {
		row("Pull agent SIGKILLs (and restarts)", s.agentKills)
		row("Pull agent incarnations, crashes", fmt.Sprintf("%d, %d", s.agent.starts, len(s.agent.crashes)))
		row("Pull agent exits on a lost leader Lease (restarted)", len(s.agent.lostLeases))
	}
	row("member apiserver restarts", fmt.Sprintf("%d (%s down in all)", s.memberRestarts, s.memberDowntime.Round(100*time.Millisecond)))
	row("member token rotations", s.rotations)
	row("namespace opt-out / opt-in", s.relabels)
	row("member unjoined and joined again", fmt.Sprintf("%d (%s from unjoin to joined in all)", s.rejoins, s.rejoinTime.Round(100*time.Millisecond)))
	row("checkpoints (fully settled / taken)", fmt.Sprintf("%d / %d", s.checkpointsClean, s.checkpoints))
	row("baseline convergence", s.initialConverge)
	var nd, ncm, nsvc int
	for _, t := range s.m.templates {
		switch t.key.Kind {
		case kindDeployment:
			nd++
		case kindConfigMap:
			ncm++
		default:
			nsvc++
		}
	}
	row("at the end: templates (Deploy/ConfigMap/Service)", fmt.Sprintf("%d (%d/%d/%d)", len(s.m.templates), nd, ncm, nsvc))
	row("at the end: policies, overrides", fmt.Sprintf("%d, %d", len(s.m.policies), len(s.m.overrides)))
	var byPP, byCPP, byPin, unbound int
	for _, t := range s.m.templates {
		switch p := s.m.policyOf(t); {
		case !s.m.bound(t):
			unbound++
		case p.pin != nil:
			byPin++
		case p.cluster:
			byCPP++
		default:
			byPP++
		}
	}
	row("at the end: claimed by PP / CPP / pin, unbound", fmt.Sprintf("%d / %d / %d, %d", byPP, byCPP, byPin, unbound))
	if res != nil {
		row("member objects checked", res.checked)
		row("kept member objects of unbound templates", res.kept)
		row("released member objects of deleted templates", res.released)
	}
	if s.cfg.churn {
		row("member Deployments (status churn)", s.churnStats())
	}
	row("restore (manager up, opted in, members Ready)", restored.Round(100*time.Millisecond))
	if converged >= 0 {
		row("convergence after the chaos", converged.Round(100*time.Millisecond))
	} else {
		row("convergence after the chaos", "NOT within "+s.cfg.converge.String())
	}
	row("manager log lines with \"forbidden\"", forbidden)
	row("checkpoints slow to settle (clues, not failures)", len(s.stalls))
	for i, v := range s.stalls {
		if i == 20 {
			fmt.Fprintf(&b, "    ... and %d more (journal)\n", len(s.stalls)-i)
			break
		}
		fmt.Fprintf(&b, "    ~ %s\n", v)
	}
	row("invariant violations", len(violations))
	for i, v := range violations {
		if i == 200 {
			fmt.Fprintf(&b, "    ... and %d more\n", len(violations)-i)
			break
		}
		fmt.Fprintf(&b, "    - %s\n", v)
	}
	return b.String()
}

// canary plants a managed ConfigMap that no template calls for in a member and makes sure
// the checker reports it: a check that reads nothing would otherwise pass.
func (s *soaker) canary() {
	member := s.env.Members[memberNames[0]]
	ns := soakNamespaces[0]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "soak-canary",
		Labels: map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}}}
	if err := member.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Errorf("soak harness: canary: %v", err)
		return
	}
	if err := member.Create(s.ctx, cm); err != nil {
		s.t.Errorf("soak harness: canary: %v", err)
		return
	}
	defer func() { _ = member.Delete(s.ctx, cm) }()
	snap, err := take(s.ctx, s.host, s.env.Members, soakNamespaces)
	if err != nil {
		s.t.Errorf("soak harness: canary: %v", err)
		return
	}
	for _, v := range check(s.m, snap).messages() {
		if strings.Contains(v, "ConfigMap "+ns+"/soak-canary: extra managed object in "+memberNames[0]) {
			return
		}
	}
	s.t.Errorf("soak harness: the checker did not report the planted ConfigMap %s/soak-canary in %s", ns, memberNames[0])
}
