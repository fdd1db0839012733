// Command demo is `make demo`: it brings up the local fleet (a host and three full members),
// starts the Flotilla manager against the host, joins the members with kubectl-flotilla,
// opts the namespace default in, and plays the scenarios of test/testdata/scenarios step by
// step. Each step prints what a user would type ($ ...) and what to look at (look: ...), then
// which member runs how many ready replicas; the end is a summary table (steps, times, the
// deployments per member) and the commands to explore. It leaves everything running;
// `make demo-down` stops it.
//
// A step is one line in run's list: a title and a method of demo.
//
// It drives the same binaries a user would: bin/fleet, bin/manager and bin/kubectl-flotilla.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/manifest"
)

const (
	stepTimeout = 2 * time.Minute
	pollEvery   = 300 * time.Millisecond
)

type demo struct {
	root, dir, bin string
	host           client.Client
	members        map[string]client.Client
	names          []string
	done           []doneStep
}

type doneStep struct {
	title string
	took  time.Duration
}

func main() {
	dir := flag.String("dir", ".fleet", "fleet state directory")
	down := flag.Bool("down", false, "stop the manager and the fleet")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, _ := os.Getwd()
	d := &demo{root: root, dir: filepath.Join(root, *dir), bin: filepath.Join(root, "bin"), members: map[string]client.Client{}}
	var err error
	if *down {
		err = d.down()
	} else {
		err = d.run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// stepFunc is one step of the demo.
type stepFunc func(ctx context.Context) error

// run plays the steps in order: each is one line here, a title and a function that prints
// what the user would type ($ ...) and what to look at (look: ...).
func (d *demo) run(ctx context.Context) error {
	start := time.Now()
	steps := []struct {
		title string
		run   stepFunc
	}{
		{"Local fleet: a host and three full members (kube-controller-manager, kube-scheduler, kwok nodes)", d.fleetUp},
		{"Flotilla manager, running against the host", d.manager},
		{"Join member1 and member3 (Push); register member2 (Pull) with its agent", d.join},
		{"Scenario weighted-pipy", d.weightedPipy},
		{"Service discovery: pipy exported from member1, imported into member3", d.serviceDiscovery},
		{"Scenario nginx-override", d.nginxOverride},
	}
	for i, s := range steps {
		title(fmt.Sprintf("%d/%d %s", i+1, len(steps), s.title))
		began := time.Now()
		if err := s.run(ctx); err != nil {
			return err
		}
		d.record(s.title, time.Since(began))
	}
	d.summary(ctx, time.Since(start))
	return nil
}

// record notes a finished step for the summary.
func (d *demo) record(title string, took time.Duration) {
	d.done = append(d.done, doneStep{title: title, took: took})
}

func (d *demo) fleetUp(ctx context.Context) error {
	say("make fleet-up", "a host and three members on 127.0.0.1; kubeconfigs in "+d.rel(d.dir))
	if err := d.sh(ctx, filepath.Join(d.bin, "fleet"), "up", "--members", "3", "--full", "--dir", d.dir, "--crds", filepath.Join(d.root, "config", "crd", "bases")); err != nil {
		return err
	}
	state, err := localcluster.ReadFleetState(d.dir)
	if err != nil {
		return err
	}
	return d.connect(state)
}

func (d *demo) manager(ctx context.Context) error {
	say("bin/manager --kubeconfig "+d.rel(d.kubeconfig("host")), "the manager turns the host into the control plane; its log is "+d.rel(filepath.Join(d.dir, "manager.log")))
	return d.startManager()
}

// pullMember is the member the demo registers in Pull mode: the host gets no credentials
// for it, and its agent, running as the member's own ServiceAccount, pulls its Works.
const pullMember = "member2"

func (d *demo) join(ctx context.Context) error {
	state, err := localcluster.ReadFleetState(d.dir)
	if err != nil {
		return err
	}
	for _, c := range state.Members {
		if c.Name == pullMember {
			if err := d.register(ctx, c.Name, c.Provider, c.Region, c.Zone); err != nil {
				return err
			}
			continue
		}
		args := []string{"join", c.Name, "--cluster-kubeconfig", d.kubeconfig(c.Name), "--kubeconfig", d.kubeconfig("host")}
		for _, f := range []struct{ flag, v string }{{"--provider", c.Provider}, {"--region", c.Region}, {"--zone", c.Zone}} {
			if f.v != "" {
				args = append(args, f.flag, f.v)
			}
		}
		say(d.plugin(args...), "Push: the host gets a least-privilege credential for the member and applies Works itself")
		if err := d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), args...); err != nil {
			return err
		}
	}
	if err := d.wait(ctx, "members Ready", d.clustersReady); err != nil {
		return err
	}
	say(d.plugin("get", "clusters"), "MODE Push or Pull, READY True for each member, its nodes, CPU and memory")
	return d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), "get", "clusters", "--kubeconfig", d.kubeconfig("host"))
}

// register registers a member in Pull mode the way a platform team would: a bootstrap token
// made in the host, the register command it prints run against the member, and the agent
// started with the member credentials register gave it.
func (d *demo) register(ctx context.Context, name, provider, region, zone string) error {
	say(d.plugin("token", "create", name), "Pull: a short-lived bootstrap token that may only register the Pull cluster "+name+", once, with no labels or placement")
	out, err := exec.CommandContext(ctx, filepath.Join(d.bin, "kubectl-flotilla"), "token", "create", name, "--ttl", "10m", "--kubeconfig", d.kubeconfig("host")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl-flotilla token create: %w: %s", err, out)
	}
	var register []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "kubectl" && f[2] == "register" {
			register = f[3:]
		}
	}
	if register == nil {
		return fmt.Errorf("kubectl-flotilla token create printed no register command:\n%s", out)
	}
	args := append([]string{"register"}, register...)
	args = append(args, "--no-deployment", "--kubeconfig", d.kubeconfig(name))
	shown := append([]string{"register", name, "--host", "...", "--token", "...", "--ca-data", "...", "--no-deployment"}, "--kubeconfig", d.rel(d.kubeconfig(name)))
	say("kubectl flotilla "+strings.Join(shown, " "), "in the member: the Cluster is created in the host with the token, which is exchanged for the agent's credential (its execution namespace and its own Cluster, nothing else)")
	if err := d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), args...); err != nil {
		return err
	}
	// Where it runs is the host administrator's to say, not the bootstrap token's.
	spec := fmt.Sprintf(`{"spec":{"provider":%q,"region":%q,"zones":[%q]}}`, provider, region, zone)
	say(fmt.Sprintf("kubectl patch cluster %s --type merge -p '%s'", name, spec), "in the host, as its administrator: where the Pull member runs")
	if err := d.host.Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(spec))); err != nil {
		return fmt.Errorf("set where %s runs: %w", name, err)
	}
	return d.startAgent(ctx, name)
}

// startAgent runs bin/agent for a Pull member as the member's ServiceAccount
// flotilla-system/flotilla-agent (in a real member, register's Deployment runs it).
func (d *demo) startAgent(ctx context.Context, name string) error {
	d.stopAgent()
	kubeconfig := filepath.Join(d.dir, name+"-agent.kubeconfig")
	if err := d.agentKubeconfig(ctx, name, kubeconfig); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(d.dir, "agent.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(d.bin, "agent"), "--kubeconfig", kubeconfig,
		"--metrics-bind-address", "127.0.0.1:18090", "--health-probe-bind-address", "127.0.0.1:18091", "--heartbeat-interval", "2s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	say("bin/agent --kubeconfig "+d.rel(kubeconfig), fmt.Sprintf("the agent of %s (pid %d, log %s): it pulls the Works of karmada-es-%s and reports status",
		name, cmd.Process.Pid, d.rel(filepath.Join(d.dir, "agent.log")), name))
	return os.WriteFile(filepath.Join(d.dir, "agent.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// agentKubeconfig writes a kubeconfig of the member as the agent's ServiceAccount.
func (d *demo) agentKubeconfig(ctx context.Context, name, path string) error {
	cfg, err := clientcmd.LoadFromFile(d.kubeconfig(name))
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: "flotilla-agent"}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7 * 24 * 3600)}}
	if err := d.members[name].SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("request a token of the agent's ServiceAccount in %s: %w", name, err)
	}
	for _, ctxName := range []string{cfg.CurrentContext} {
		c := cfg.Contexts[ctxName]
		if c == nil {
			return fmt.Errorf("kubeconfig of %s has no current context", name)
		}
		cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"flotilla-agent": {Token: tr.Status.Token}}
		c.AuthInfo = "flotilla-agent"
	}
	return clientcmd.WriteToFile(*cfg, path)
}

func (d *demo) stopAgent() { d.stopPid("agent.pid", "agent") }

// summary prints what each step did and how long it took, the fleet's deployments, and the
// commands to explore.
func (d *demo) summary(ctx context.Context, total time.Duration) {
	fmt.Printf("\n== Summary: done in %s; everything keeps running\n\n", total.Round(time.Second))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "   STEP\tTOOK\n")
	for i, s := range d.done {
		fmt.Fprintf(w, "   %d. %s\t%s\n", i+1, s.title, s.took.Round(100*time.Millisecond))
	}
	_ = w.Flush()
	fmt.Println()
	w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "   DEPLOYMENT\tHOST (FLEET) READY")
	for _, m := range d.names {
		fmt.Fprintf(w, "\t%s", strings.ToUpper(m))
	}
	fmt.Fprintln(w)
	deps := &appsv1.DeploymentList{}
	_ = d.host.List(ctx, deps, client.InNamespace("default"))
	for _, dep := range deps.Items {
		fmt.Fprintf(w, "   %s\t%d/%d", dep.Name, dep.Status.ReadyReplicas, ptr.Deref(dep.Spec.Replicas, 1))
		for _, m := range d.names {
			md := &appsv1.Deployment{}
			if err := d.members[m].Get(ctx, types.NamespacedName{Namespace: "default", Name: dep.Name}, md); err != nil {
				fmt.Fprintf(w, "\t-")
				continue
			}
			fmt.Fprintf(w, "\t%d/%d", md.Status.ReadyReplicas, ptr.Deref(md.Spec.Replicas, 1))
		}
		fmt.Fprintln(w)
	}
	_ = w.Flush()

	fmt.Printf("\n   Explore (from %s):\n\n", d.root)
	fmt.Printf("   export KUBECONFIG=%s   # the host\n", d.rel(d.kubeconfig("host")))
	fmt.Printf("   export PATH=$PWD/bin:$PATH         # kubectl finds the plugin kubectl-flotilla there\n")
	w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, c := range [][2]string{
		{"kubectl flotilla get clusters -o wide", "members, health, capacity"},
		{"kubectl flotilla status deploy/pipy", "template -> policy -> binding -> each member's Work"},
		{"kubectl flotilla get deploy --clusters member1,member2,member3", "the members' copies side by side"},
		{"kubectl flotilla describe deploy/pipy", "per member: replicas, pods, events"},
		{"kubectl flotilla events deploy/pipy", "events of pipy, its ReplicaSets and pods, all members"},
		{"kubectl flotilla logs deploy/pipy", "kwok runs no containers: each container reports an error"},
		{"kubectl flotilla describe cluster member1", "conditions, capacity, taints, bindings on it"},
		{"kubectl flotilla dashboard", "the same in a browser, live"},
		{"kubectl get clusters,pp,rb -o wide", "the host's own objects"},
	} {
		fmt.Fprintf(w, "   %s\t# %s\n", c[0], c[1])
	}
	_ = w.Flush()
	for _, n := range d.names {
		fmt.Printf("   kubectl --kubeconfig %s get deploy -A   # %s directly\n", d.rel(d.kubeconfig(n)), n)
	}
	fmt.Printf("   tail -f %s   # manager log\n\n   make demo-down   # stop everything\n", d.rel(filepath.Join(d.dir, "manager.log")))
}

func (d *demo) weightedPipy(ctx context.Context) error {
	sc := filepath.Join(d.root, "test", "testdata", "scenarios", "weighted-pipy")
	step("Opt the namespace default in to propagation.")
	if err := d.optIn(ctx, "default"); err != nil {
		return err
	}
	if err := d.wait(ctx, "the host hold enforced in default (no Pods run on the host)", func(ctx context.Context) (bool, error) {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "flotilla-hold-probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		err := d.host.Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), wellknown.PropagationLabel), nil
	}); err != nil {
		return err
	}

	step("Apply app.yaml (Deployment pipy, 2 replicas; Service pipy). No policy matches yet.")
	if err := d.apply(ctx, filepath.Join(sc, "app.yaml")); err != nil {
		return err
	}
	if err := d.wait(ctx, "the no-policy warning", func(ctx context.Context) (bool, error) {
		note := d.event(ctx, "default", "Deployment", "pipy", wellknown.EventReasonApplyPolicyFailed)
		if note != "" {
			fmt.Printf("   Warning event on Deployment pipy: %q\n", note)
		}
		return note != "", nil
	}); err != nil {
		return err
	}
	fmt.Println("     look: the Warning event on the template says no policy matches; no member runs pipy yet")
	d.table(ctx, "default", "pipy")

	step("Apply policy.yaml (Divided/Weighted, 10/10/10 over member1..3): two members get 1 replica each.")
	if err := d.apply(ctx, filepath.Join(sc, "policy.yaml")); err != nil {
		return err
	}
	if err := d.wait(ctx, "1/1 ready on two members", d.readyCounts("default", "pipy", []int32{1, 1})); err != nil {
		return err
	}
	d.table(ctx, "default", "pipy")
	d.services(ctx, "default", "pipy")
	say(d.plugin("status", "deploy/pipy"), "the binding READY 2/2 and one line per member's Work: Applied, Healthy, ready replicas")
	_ = d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), "status", "deploy/pipy", "-n", "default", "--kubeconfig", d.kubeconfig("host"))

	step("Scale pipy to 3 replicas: each member runs 1, the first two keep theirs.")
	say("kubectl scale deploy pipy --replicas 3", "the template on the host reports the fleet's ready replicas (kubectl get deploy pipy)")
	dep := &appsv1.Deployment{}
	if err := d.host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy"}, dep); err != nil {
		return err
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = ptr.To[int32](3)
	if err := d.host.Patch(ctx, dep, patch); err != nil {
		return err
	}
	if err := d.wait(ctx, "1/1 ready on three members", d.readyCounts("default", "pipy", []int32{1, 1, 1})); err != nil {
		return err
	}
	if err := d.wait(ctx, "the template on the host reads the fleet's 3/3 (kubectl get deploy pipy)", d.hostReady("default", "pipy", 3)); err != nil {
		return err
	}
	d.table(ctx, "default", "pipy")

	step("Apply client.yaml (Deployment curl, pinned to member3).")
	if err := d.apply(ctx, filepath.Join(sc, "client.yaml")); err != nil {
		return err
	}
	if err := d.wait(ctx, "curl ready on member3", d.readyCounts("default", "curl", []int32{1})); err != nil {
		return err
	}
	d.table(ctx, "default", "curl")
	say(d.plugin("get", "deploy", "--clusters", "member1,member2,member3"), "each member's own copies side by side, with a CLUSTER column")
	return d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), "get", "deploy", "-n", "default", "--clusters", strings.Join(d.names, ","),
		"--kubeconfig", d.kubeconfig("host"))
}

func (d *demo) nginxOverride(ctx context.Context) error {
	step("Apply all.yaml: nginx 1:1 over member1 and member2; on member1 only, another registry and a label.")
	if err := d.apply(ctx, filepath.Join(d.root, "test", "testdata", "scenarios", "nginx-override", "all.yaml")); err != nil {
		return err
	}
	if err := d.wait(ctx, "1/1 ready on member1 and member2", d.readyCounts("default", "nginx", []int32{1, 1})); err != nil {
		return err
	}
	d.table(ctx, "default", "nginx")
	rb := &workv1alpha2.ResourceBinding{}
	if err := d.wait(ctx, "binding FullyApplied", func(ctx context.Context) (bool, error) {
		if err := d.host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}, rb); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionFullyApplied), nil
	}); err != nil {
		return err
	}
	fmt.Printf("   ResourceBinding default/nginx-deployment: Scheduled=%s FullyApplied=%s, clusters %v\n",
		condStatus(rb.Status.Conditions, wellknown.ConditionScheduled), condStatus(rb.Status.Conditions, wellknown.ConditionFullyApplied), targets(rb))
	say(d.plugin("describe", "deploy/nginx"), "per member: replicas, the overridden image on member1, its pods and events")
	return d.sh(ctx, filepath.Join(d.bin, "kubectl-flotilla"), "describe", "deploy/nginx", "-n", "default", "--kubeconfig", d.kubeconfig("host"))
}

// table prints, per member, the Deployment's ready/desired replicas, image and extra labels.
func (d *demo) table(ctx context.Context, ns, name string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "   CLUSTER\tDEPLOYMENT\tREADY\tIMAGE\tLABELS\n")
	for _, m := range d.names {
		dep := &appsv1.Deployment{}
		if err := d.members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep); err != nil {
			fmt.Fprintf(w, "   %s\t%s\t-\t-\t-\n", m, name)
			continue
		}
		labels := []string{}
		for k, v := range dep.Labels {
			if k != "app" && k != wellknown.ManagedLabel {
				labels = append(labels, k+"="+v)
			}
		}
		sort.Strings(labels)
		fmt.Fprintf(w, "   %s\t%s\t%d/%d\t%s\t%s\n", m, name, dep.Status.ReadyReplicas, ptr.Deref(dep.Spec.Replicas, 1),
			dep.Spec.Template.Spec.Containers[0].Image, strings.Join(labels, ","))
	}
	tmpl := &appsv1.Deployment{}
	if err := d.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tmpl); err == nil {
		fmt.Fprintf(w, "   host (template: the fleet)\t%s\t%d/%d\t%s\t\n", name, tmpl.Status.ReadyReplicas, ptr.Deref(tmpl.Spec.Replicas, 1),
			tmpl.Spec.Template.Spec.Containers[0].Image)
	}
	_ = w.Flush()
}

// hostReady is true once the template on the host reports the fleet's ready replicas, for
// its current generation.
func (d *demo) hostReady(ns, name string, want int32) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		dep := &appsv1.Deployment{}
		if err := d.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep); err != nil {
			return false, nil
		}
		return dep.Status.ReadyReplicas == want && dep.Status.ObservedGeneration == dep.Generation, nil
	}
}

func (d *demo) services(ctx context.Context, ns, name string) {
	var on []string
	for _, m := range d.names {
		if d.members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Service{}) == nil {
			on = append(on, m)
		}
	}
	fmt.Printf("   Service %s is on: %s\n", name, strings.Join(on, ", "))
}

// readyCounts waits until the members that run the Deployment have exactly these ready
// replicas (in any order) and the others do not run it.
func (d *demo) readyCounts(ns, name string, want []int32) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var got []int32
		for _, m := range d.names {
			dep := &appsv1.Deployment{}
			if err := d.members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep); err != nil {
				continue
			}
			if ptr.Deref(dep.Spec.Replicas, 1) == 0 {
				continue
			}
			if dep.Status.ReadyReplicas != ptr.Deref(dep.Spec.Replicas, 1) {
				return false, nil
			}
			got = append(got, dep.Status.ReadyReplicas)
		}
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		return fmt.Sprint(got) == fmt.Sprint(want), nil
	}
}

func (d *demo) clustersReady(ctx context.Context) (bool, error) {
	for _, n := range d.names {
		c := &clusterv1alpha1.Cluster{}
		if err := d.host.Get(ctx, types.NamespacedName{Name: n}, c); err != nil || !meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady) {
			return false, nil
		}
	}
	return true, nil
}

func (d *demo) event(ctx context.Context, ns, kind, name, reason string) string {
	list := &eventsv1.EventList{}
	if err := d.host.List(ctx, list, client.InNamespace(ns)); err != nil {
		return ""
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

func (d *demo) optIn(ctx context.Context, ns string) error {
	n := &corev1.Namespace{}
	if err := d.host.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return err
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[wellknown.PropagationLabel] = wellknown.PropagationEnabled
	say(fmt.Sprintf("kubectl label namespace %s %s=%s", ns, wellknown.PropagationLabel, wellknown.PropagationEnabled),
		"templates in "+ns+" now propagate, and the host runs none of their Pods")
	return d.host.Patch(ctx, n, patch)
}

func (d *demo) apply(ctx context.Context, path string) error {
	say("kubectl apply -f "+d.rel(path), "")
	_, err := manifest.ApplyFile(ctx, d.host, path, "kubectl")
	return err
}

func (d *demo) wait(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	start := time.Now()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			fmt.Printf("   ✓ %s (%s)\n", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; see %s", what, ctx.Err(), filepath.Join(d.dir, "manager.log"))
		case <-time.After(pollEvery):
		}
	}
}

func (d *demo) connect(state *localcluster.FleetState) error {
	s := flotillascheme.New()
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig("host"))
	if err != nil {
		return err
	}
	if d.host, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return err
	}
	for _, m := range state.Members {
		cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig(m.Name))
		if err != nil {
			return err
		}
		c, err := client.New(cfg, client.Options{Scheme: s})
		if err != nil {
			return err
		}
		d.members[m.Name] = c
		d.names = append(d.names, m.Name)
	}
	return nil
}

func (d *demo) kubeconfig(name string) string { return filepath.Join(d.dir, name+".kubeconfig") }

// startManager (re)starts bin/manager in the background, detached, logging to the fleet dir.
func (d *demo) startManager() error {
	d.stopManager()
	logf, err := os.Create(filepath.Join(d.dir, "manager.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(d.bin, "manager"), "--kubeconfig", d.kubeconfig("host"),
		"--metrics-bind-address", "127.0.0.1:18080", "--health-probe-bind-address", "127.0.0.1:18081", "--cluster-probe-interval", "2s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	fmt.Printf("   bin/manager --kubeconfig %s   (pid %d, log %s, metrics http://127.0.0.1:18080/metrics)\n",
		d.kubeconfig("host"), cmd.Process.Pid, filepath.Join(d.dir, "manager.log"))
	return os.WriteFile(filepath.Join(d.dir, "manager.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

func (d *demo) stopManager() { d.stopPid("manager.pid", "manager") }

// stopPid stops the process whose pid file is in the fleet directory, if it still is the
// binary named.
func (d *demo) stopPid(file, binary string) {
	data, err := os.ReadFile(filepath.Join(d.dir, file))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || !strings.Contains(string(cmdline), binary) {
		return // not ours any more
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	_ = os.Remove(filepath.Join(d.dir, file))
}

func (d *demo) down() error {
	d.stopAgent()
	d.stopManager()
	return d.sh(context.Background(), filepath.Join(d.bin, "fleet"), "down", "--dir", d.dir)
}

func (d *demo) sh(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	out := &indent{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}

// indent prints a command's output three spaces in. A write may end mid-line: the indent
// goes only at the start of a line, so that tables keep their columns.
type indent struct{ midLine bool }

func (in *indent) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l == "" {
			continue
		}
		if !in.midLine {
			fmt.Print("   ")
		}
		fmt.Print(l)
		in.midLine = !strings.HasSuffix(l, "\n")
	}
	return len(p), nil
}

func title(s string) { fmt.Printf("\n== %s\n", s) }
func step(s string)  { fmt.Printf("\n-> %s\n", s) }

// say prints what the user would type and, when given, what to look at in the output.
func say(command, look string) {
	fmt.Printf("   $ %s\n", command)
	if look != "" {
		fmt.Printf("     look: %s\n", look)
	}
}

// plugin is the kubectl flotilla command line for args, with the fleet's paths relative.
func (d *demo) plugin(args ...string) string {
	out := []string{"kubectl", "flotilla"}
	for _, a := range args {
		out = append(out, d.rel(a))
	}
	return strings.Join(out, " ")
}

// rel shortens an absolute path under the repository to a relative one.
func (d *demo) rel(p string) string {
	if r, err := filepath.Rel(d.root, p); err == nil && filepath.IsAbs(p) && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func condStatus(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

func targets(rb *workv1alpha2.ResourceBinding) string {
	var out []string
	for _, tc := range rb.Spec.Clusters {
		out = append(out, fmt.Sprintf("%s=%d", tc.Name, tc.Replicas))
	}
	return strings.Join(out, " ")
}
