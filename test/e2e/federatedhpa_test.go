package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// karmadaFederatedHPAExample is Karmada's documented FederatedHPA walkthrough (tutorials,
// "Autoscaling across clusters with resource metrics"): the Deployment, the Service, the
// PropagationPolicy and the FederatedHPA, unchanged.
const karmadaFederatedHPAExample = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  replicas: 1
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx
        name: nginx
        resources:
          requests:
            cpu: 25m
            memory: 64Mi
          limits:
            cpu: 25m
            memory: 64Mi
---
apiVersion: v1
kind: Service
metadata:
  name: nginx-service
spec:
  ports:
  - port: 80
    targetPort: 80
  selector:
    app: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
    - apiVersion: v1
      kind: Service
      name: nginx-service
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames:
                - member1
            weight: 1
          - targetCluster:
              clusterNames:
                - member2
            weight: 1
---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: nginx
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: nginx
  minReplicas: 1
  maxReplicas: 10
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 10
    scaleUp:
      stabilizationWindowSeconds: 10
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 10
`

// load is kwok's ClusterResourceUsage giving every pod of ns cpu of usage; the members'
// metrics.k8s.io stand-in (internal/localcluster/metrics.go) reports it.
func load(ns, cpu string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterResourceUsage
metadata:
  name: `+ns+`
spec:
  selector:
    matchNamespaces: [`+ns+`]
  usages:
  - usage:
      cpu:
        value: `+cpu+`
`), &u.Object)).To(Succeed())
	return u
}

var _ = Describe("FederatedHPA", func() {
	It("Karmada's documented example scales the Deployment up under simulated load in the members and back down without it; the template is never written", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-fhpa")
		var fhpaObj *unstructured.Unstructured
		for _, doc := range strings.Split(karmadaFederatedHPAExample, "\n---\n") {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
			u.SetNamespace(ns)
			if u.GetKind() == "FederatedHPA" {
				fhpaObj = u
				continue
			}
			Expect(env.Host.Create(ctx, u)).To(Succeed())
		}
		// fleet is the binding's replicas, the members' spec and ready replicas.
		fleet := func(g Gomega) (binding, spec, ready int32) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx-deployment"}, rb)).To(Succeed())
			for m, r := range env.DeploymentReplicas(ctx, ns, "nginx") {
				if m == "member1" || m == "member2" {
					spec += max(r.Spec, 0)
					ready += max(r.Ready, 0)
				}
			}
			return rb.Spec.Replicas, spec, ready
		}
		Eventually(func(g Gomega) {
			b, s, r := fleet(g)
			g.Expect([]int32{b, s, r}).To(Equal([]int32{1, 1, 1}))
		}).WithContext(ctx).Should(Succeed())

		By("load in both members: every nginx pod uses its whole 25m (100%, the target is 10%)")
		start := time.Now()
		for _, m := range []string{"member1", "member2"} {
			Expect(env.Members[m].Create(ctx, load(ns, "25m"))).To(Succeed())
			DeferCleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(env.Members[m].Delete(ctx, load(ns, "25m"))) })
		}
		Expect(env.Host.Create(ctx, fhpaObj)).To(Succeed())
		h := &autoscalingv1alpha1.FederatedHPA{}
		Eventually(func(g Gomega) {
			b, s, r := fleet(g)
			// 10x the target asks for 10; the default scale-up policy allows 4 pods or 100% per 15 s.
			g.Expect([]int32{b, s, r}).To(Equal([]int32{5, 5, 5}))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("FederatedHPA scale-up latency, load to 5 replicas Ready on the members: %s\n", time.Since(start).Round(time.Millisecond))
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx"}, h)).To(Succeed())
		Expect(h.Status.DesiredReplicas).To(BeEquivalentTo(5))
		rb := &workv1alpha2.ResourceBinding{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx-deployment"}, rb)).To(Succeed())
		Expect(rb.GetAnnotations()[wellknown.FederatedHPAAnnotation]).To(Equal("FederatedHPA nginx: 5 replicas"))
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion("apps/v1")
		tmpl.SetKind("Deployment")
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx"}, tmpl)).To(Succeed())
		Expect(tmpl.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(1), "the template is never written")

		By("no load, and this spec's own short scale-down window: back to the minimum")
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx"}, h)).To(Succeed())
			h.Spec.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}
			g.Expect(env.Host.Update(ctx, h)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		for _, m := range []string{"member1", "member2"} {
			Expect(env.Members[m].Delete(ctx, load(ns, "25m"))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			b, s, _ := fleet(g)
			g.Expect([]int32{b, s}).To(Equal([]int32{1, 1}))
		}).WithContext(ctx).Should(Succeed())
	})
})
