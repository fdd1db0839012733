package failover

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/testing/churn"
)

func newReconciler() *Reconciler {
	return &Reconciler{Client: fake.NewClientBuilder().WithScheme(flotillascheme.New()).Build(), Recorder: &events.FakeRecorder{},
		NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
}

// watched is a binding on clusters, with application failover, and its unhealthy Works there.
func watched(name string, uid types.UID, clusters ...string) (*workv1alpha2.ResourceBinding, map[string]*workv1alpha1.Work) {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
	rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](3600)}}}
	works := map[string]*workv1alpha1.Work{}
	for _, c := range clusters {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
		w := &workv1alpha1.Work{}
		w.Status.Conditions = []metav1.Condition{{Type: wellknown.WorkConditionApplied, Status: metav1.ConditionTrue}}
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Health: workv1alpha1.ResourceUnhealthy}}
		works[c] = w
	}
	return rb, works
}

func (r *Reconciler) entries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.remembered {
		n += 1 + len(m.told) + len(m.unhealthySince)
	}
	return n
}

func TestRememberedFollowsTheBinding(t *testing.T) {
	r := newReconciler()
	now := time.Now()
	rb, works := watched("a", "uid-1", "m1", "m2")
	key := client.ObjectKeyFromObject(rb)
	check := func(step string, wantTold, wantUnhealthy int) {
		t.Helper()
		if told, unhealthy := r.Remembers(key); told != wantTold || unhealthy != wantUnhealthy {
			t.Fatalf("%s: told %d, unhealthy on %d clusters; want %d, %d", step, told, unhealthy, wantTold, wantUnhealthy)
		}
	}
	r.applicationPhase(rb, &rb.Spec, works, now, nil)
	r.once(rb, "m1", "countdown/m1/t/1", "Normal", "R", "x")
	r.once(rb, "m2", "blocked/m2", "Warning", "R", "x")
	check("unhealthy on m1 and m2, a countdown and a blocked task told", 2, 2)

	r.keepTold(rb, "countdown/", func(what string) bool { return what == "countdown/m1/t/2" })
	check("the taint came again (another countdown)", 1, 2)
	r.keepTold(rb, "blocked/", func(string) bool { return false })
	check("the task is done", 0, 2)

	rb.Spec.Clusters = rb.Spec.Clusters[:1]
	r.applicationPhase(rb, &rb.Spec, works, now, nil)
	check("the binding left m2", 0, 1)
	rb.Spec.Failover = nil
	r.applicationPhase(rb, &rb.Spec, works, now, nil)
	check("application failover is off", 0, 0)
	if r.entries() != 0 {
		t.Fatalf("%d entries left of a binding with nothing to remember", r.entries())
	}

	r.once(rb, "m1", "countdown/m1/t/1", "Normal", "R", "x")
	again, _ := watched("a", "uid-2", "m1")
	r.once(again, "m1", "blocked/m1", "Warning", "R", "x")
	check("created again under the name: the first binding's is gone", 1, 0)

	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	check("the binding is gone", 0, 0)

	r.Shards = shard.NewSet(4)
	for i := range 20 {
		b, _ := watched(fmt.Sprintf("b-%d", i), "u")
		r.once(b, "m1", "blocked/m1", "Warning", "R", "x")
	}
	for k := range 4 {
		r.forgetShard(k)
	}
	if r.entries() != 0 {
		t.Fatalf("%d entries left after every shard was lost", r.entries())
	}
}

// BenchmarkChurn runs bindings through what failover keeps of them: unhealthy on two
// clusters, a countdown and a blocked task told, a taint that comes again, the binding
// leaving a cluster, then the binding deleted and reconciled (NotFound). entries-left must be
// 0 and the heap flat.
//
//	go test -run '^$' -bench Churn -benchtime 3x ./controllers/failover/
func BenchmarkChurn(b *testing.B) {
	r := newReconciler()
	ctx, now := context.Background(), time.Now()
	churn.Run(b, func(i int) {
		rb, works := watched(fmt.Sprintf("rb-%d", i), types.UID(fmt.Sprint(i)), "m1", "m2")
		r.applicationPhase(rb, &rb.Spec, works, now, nil)
		r.once(rb, "m1", "countdown/m1/t/1", "Normal", "R", "x")
		r.once(rb, "m2", "blocked/m2", "Warning", "R", "x")
		r.keepTold(rb, "countdown/", func(what string) bool { return what == "countdown/m1/t/2" })
		r.once(rb, "m1", "countdown/m1/t/2", "Normal", "R", "x")
		rb.Spec.Clusters = rb.Spec.Clusters[:1]
		r.applicationPhase(rb, &rb.Spec, works, now, nil)
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rb)}); err != nil {
			b.Fatal(err)
		}
	}, r.entries)
}

// BenchmarkTaintFlaps keeps one binding on a cluster whose NoExecute taint comes and goes
// (each time with a new timeAdded, so a new countdown is told), through the taint phase as
// Reconcile runs it. What was told of a taint that went must not pile up while the binding
// lives: entries-left must be 0 and the heap flat.
//
//	go test -run '^$' -bench TaintFlaps -benchtime 3x ./controllers/failover/
func BenchmarkTaintFlaps(b *testing.B) {
	r := newReconciler()
	ctx := context.Background()
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	r.Client = clusterReader{cluster: cl}
	rb, _ := watched("rb", "uid", "m1")
	rb.Spec.Placement = &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{
		{Key: "flap", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](3600)}}}
	start := time.Now()
	taint := func(taints ...corev1.Taint) {
		cl.Spec.Taints = taints
		if _, _, err := r.taintPhase(ctx, rb, &rb.Spec, &rb.Status, start); err != nil {
			b.Fatal(err)
		}
	}
	churn.Run(b, func(i int) {
		taint(corev1.Taint{Key: "flap", Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.NewTime(start.Add(time.Duration(i) * time.Second)))})
		taint()
	}, r.entries)
}

// clusterReader reads one Cluster, as a cache would.
type clusterReader struct {
	client.Client
	cluster *clusterv1alpha1.Cluster
}

func (c clusterReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if cl, ok := obj.(*clusterv1alpha1.Cluster); ok && key.Name == c.cluster.Name {
		c.cluster.DeepCopyInto(cl)
		return nil
	}
	return fmt.Errorf("no %s", key)
}
