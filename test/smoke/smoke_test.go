package smoke

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

func TestSmoke(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, err := framework.StartFleet(ctx, localcluster.DefaultMembers(3, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Fleet.Stop()
	cfg, err := env.ManagerConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: flotillascheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	members, err := controllers.Setup(ctx, mgr, controllers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go mgr.Start(ctx)
	for _, m := range []string{"member1", "member2", "member3"} {
		if err := env.Join(ctx, m); err != nil {
			t.Fatal(err)
		}
		env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.ExecutionNamespace(m)}})
	}
	// Stand-in for the cluster controller.
	go func() {
		for ctx.Err() == nil {
			for _, m := range []string{"member1", "member2", "member3"} {
				c := &clusterv1alpha1.Cluster{}
				if env.Host.Get(ctx, types.NamespacedName{Name: m}, c) != nil {
					continue
				}
				s := &corev1.Secret{}
				env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.SystemNamespace, Name: m}, s)
				if _, err := members.Connect(ctx, c, s); err != nil {
					t.Log(err)
				}
				members.Probe(ctx, m)
				if !meta.IsStatusConditionTrue(c.Status.Conditions, "Ready") {
					p := client.MergeFrom(c.DeepCopy())
					meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: "Ready", Status: "True", Reason: "ClusterReady"})
					c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
						{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "services", Kind: "Service"}}}}
					if err := env.Host.Status().Patch(ctx, c, p); err != nil {
						t.Log(err)
					}
				}
			}
			time.Sleep(time.Second)
		}
	}()
	ns := &corev1.Namespace{}
	env.Host.Get(ctx, types.NamespacedName{Name: "default"}, ns)
	p := client.MergeFrom(ns.DeepCopy())
	ns.Labels = map[string]string{wellknown.PropagationLabel: "enabled"}
	if err := env.Host.Patch(ctx, ns, p); err != nil {
		t.Fatal(err)
	}
	root := framework.RepoRoot()
	start := time.Now()
	if err := framework.Apply(ctx, env.Host, filepath.Join(root, "test/testdata/scenarios/nginx-override/all.yaml")); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		got := env.DeploymentReplicas(ctx, "default", "nginx")
		rb := &workv1alpha2.ResourceBinding{}
		env.Host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}, rb)
		fmt.Printf("%v %v clusters=%v conds=%v\n", time.Since(start).Round(time.Millisecond), got, rb.Spec.Clusters, rb.Status.Conditions)
		if got["member1"].Spec == 1 && got["member2"].Spec == 1 && meta.IsStatusConditionTrue(rb.Status.Conditions, "FullyApplied") {
			d := &appsv1.Deployment{}
			env.Members["member1"].Get(ctx, types.NamespacedName{Namespace: "default", Name: "nginx"}, d)
			fmt.Println("member1 image", d.Spec.Template.Spec.Containers[0].Image, d.Labels)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	d := &appsv1.Deployment{}
	env.Host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "nginx"}, d)
	p2 := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](4)
	env.Host.Patch(ctx, d, p2)
	time.Sleep(3 * time.Second)
	fmt.Println("after scale", env.DeploymentReplicas(ctx, "default", "nginx"))
	if ctx.Err() != nil {
		t.Fatal("timed out")
	}
}
