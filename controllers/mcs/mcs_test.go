package mcs_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	networkingv1alpha1 "github.com/flotilla-io/flotilla/api/networking/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	mcscontroller "github.com/flotilla-io/flotilla/controllers/mcs"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/mcs"
)

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var managed = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}

func memberNamespace(ctx context.Context, m, ns string) {
	GinkgoHelper()
	err := env.Members[m].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// provide writes into member m what propagation and kube-controller-manager would: the
// Service (managed) and one EndpointSlice with the given IPs.
func provide(ctx context.Context, m, ns, name string, port int32, ips ...string) {
	GinkgoHelper()
	memberNamespace(ctx, m, ns)
	Expect(env.Members[m].Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: managed},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "http", Port: port}}}})).To(Succeed())
	Expect(env.Members[m].Create(ctx, providerSlice(ns, name, ips...))).To(Succeed())
}

func providerSlice(ns, name string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: mcs.KubeEndpointSliceController, wellknown.ManagedLabel: wellknown.ManagedLabelValue}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("node-1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func exportIn(ctx context.Context, m, ns, name string) {
	GinkgoHelper()
	Eventually(func() error {
		return env.Members[m].Create(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: managed}})
	}).WithContext(ctx).Should(Succeed(), "the controller installs the ServiceExport CRD into %s", m)
}

// imported returns member m's derived endpoints of the service by source cluster.
func imported(ctx context.Context, g Gomega, m, ns, name string) map[string][]string {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Members[m].List(ctx, list, client.InNamespace(ns), client.MatchingLabels{mcs.LabelServiceName: name, mcs.ManagedByLabel: mcs.ManagedByValue})).To(Succeed())
	out := map[string][]string{}
	for _, s := range list.Items {
		g.Expect(s.Labels).To(HaveKeyWithValue(discoveryv1.LabelServiceName, mcs.DerivedServiceName(name)))
		src := s.Labels[mcs.LabelSourceCluster]
		for _, ep := range s.Endpoints {
			g.Expect(ep.NodeName).To(BeNil())
			out[src] = append(out[src], ep.Addresses...)
		}
		slices.Sort(out[src])
	}
	return out
}

func exportCondition(ctx context.Context, g Gomega, m, ns, name, typ string) *metav1.Condition {
	e := &mcsv1alpha1.ServiceExport{}
	g.Expect(env.Members[m].Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, e)).To(Succeed())
	return meta.FindStatusCondition(e.Status.Conditions, typ)
}

func gone(ctx context.Context, m string, obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(env.Members[m].Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}
}

var _ = Describe("ServiceExport", func() {
	It("installs the MCS CRDs into every member", func(ctx context.Context) {
		for _, c := range []client.Client{env.Members["member1"], env.Members["member2"], env.Members["member3"]} {
			for _, name := range []string{"serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io"} {
				Eventually(func() error {
					crd := &metav1.PartialObjectMetadata{}
					crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
					return c.Get(ctx, client.ObjectKey{Name: name}, crd)
				}).WithContext(ctx).Should(Succeed())
			}
		}
	})

	It("asks no member that serves them already to create the MCS CRDs (every connection ensures them)", func(ctx context.Context) {
		Eventually(func() error {
			return env.Members["member1"].List(ctx, &mcsv1alpha1.ServiceExportList{})
		}).WithContext(ctx).Should(Succeed())
		var posts atomic.Int32
		cfg := rest.CopyConfig(env.Fleet.Member("member1").RESTConfig())
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/customresourcedefinitions") {
					posts.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(mcscontroller.EnsureCRDs(ctx, c)).To(Succeed())
		Expect(posts.Load()).To(BeZero(), "a create refused as AlreadyExists is a write request all the same")
	})

	It("imports the exports of member1 and member2 everywhere, reports a port conflict, follows the slices and cleans up", func(ctx context.Context) {
		ns := "mcs-export"
		provide(ctx, "member1", ns, "web", 80, "10.1.0.1", "10.1.0.2")
		exportIn(ctx, "member1", ns, "web")
		provide(ctx, "member2", ns, "web", 8080, "10.2.0.1")
		exportIn(ctx, "member2", ns, "web")

		By("member3 (which has not even the namespace) gets both clusters' endpoints")
		Eventually(func(g Gomega) {
			g.Expect(imported(ctx, g, "member3", ns, "web")).To(Equal(map[string][]string{
				"member1": {"10.1.0.1", "10.1.0.2"}, "member2": {"10.2.0.1"}}))
		}).WithContext(ctx).Should(Succeed())
		nsObj := &corev1.Namespace{}
		Expect(env.Members["member3"].Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		imp := &mcsv1alpha1.ServiceImport{}
		Expect(env.Members["member3"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, imp)).To(Succeed())
		Expect(imp.Spec.Ports).To(Equal([]mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}), "the oldest export's port")
		Expect(imp.Labels).To(HaveKeyWithValue(mcs.LabelServiceName, "web"))
		derived := &corev1.Service{}
		Expect(env.Members["member3"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "derived-web"}, derived)).To(Succeed())
		Expect(derived.Spec.Selector).To(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(imp), imp)).To(Succeed())
			g.Expect(imp.Spec.IPs).To(Equal([]string{derived.Spec.ClusterIP}))
			g.Expect(imp.Status.Clusters).To(Equal([]mcsv1alpha1.ClusterStatus{{Cluster: "member1"}, {Cluster: "member2"}}), "the exporting clusters")
		}).WithContext(ctx).Should(Succeed())
		By("the providers consume too: member1 gets the service's endpoints")
		Eventually(func(g Gomega) {
			g.Expect(imported(ctx, g, "member1", ns, "web")).To(HaveKey("member2"))
		}).WithContext(ctx).Should(Succeed())

		By("the newer export carries the port conflict, the oldest none")
		Eventually(func(g Gomega) {
			c := exportCondition(ctx, g, "member2", ns, "web", string(mcsv1alpha1.ServiceExportConditionConflict))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(string(mcsv1alpha1.ServiceExportReasonPortConflict)))
			g.Expect(c.Message).To(ContainSubstring("member1"))
			c = exportCondition(ctx, g, "member1", ns, "web", string(mcsv1alpha1.ServiceExportConditionConflict))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			v := exportCondition(ctx, g, "member1", ns, "web", string(mcsv1alpha1.ServiceExportConditionValid))
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())

		By("a new pod IP in member1's slice reaches member3")
		s := &discoveryv1.EndpointSlice{}
		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-abcde"}, s)).To(Succeed())
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.1.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		Expect(env.Members["member1"].Update(ctx, s)).To(Succeed())
		Eventually(func(g Gomega) []string {
			return imported(ctx, g, "member3", ns, "web")["member1"]
		}).WithContext(ctx).Should(Equal([]string{"10.1.0.1", "10.1.0.2", "10.1.0.3"}))

		By("a derived slice edited in member3 is put back")
		list := &discoveryv1.EndpointSliceList{}
		Expect(env.Members["member3"].List(ctx, list, client.InNamespace(ns), client.MatchingLabels{mcs.LabelSourceCluster: "member2"})).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		edited := list.Items[0]
		edited.Endpoints = nil
		Expect(env.Members["member3"].Update(ctx, &edited)).To(Succeed())
		Eventually(func(g Gomega) []string {
			return imported(ctx, g, "member3", ns, "web")["member2"]
		}).WithContext(ctx).Should(Equal([]string{"10.2.0.1"}))

		By("deleting member2's export removes its endpoints, and only them")
		Expect(env.Members["member2"].Delete(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).To(Succeed())
		Eventually(func(g Gomega) map[string][]string {
			return imported(ctx, g, "member3", ns, "web")
		}).WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.0.1", "10.1.0.2", "10.1.0.3"}}))
		Eventually(func(g Gomega) []mcsv1alpha1.ClusterStatus {
			g.Expect(env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(imp), imp)).To(Succeed())
			return imp.Status.Clusters
		}).WithContext(ctx).Should(Equal([]mcsv1alpha1.ClusterStatus{{Cluster: "member1"}}), "member2 no longer exports it")

		By("deleting the last export removes everything derived, and nothing else")
		Expect(env.Members["member1"].Delete(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).To(Succeed())
		for _, m := range []string{"member1", "member2", "member3"} {
			Eventually(gone(ctx, m, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).WithContext(ctx).Should(BeTrue(), m)
			Eventually(gone(ctx, m, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "derived-web"}})).WithContext(ctx).Should(BeTrue(), m)
			Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, m, ns, "web") }).WithContext(ctx).Should(BeEmpty(), m)
		}
		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{})).To(Succeed())
		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-abcde"}, &discoveryv1.EndpointSlice{})).To(Succeed())
	})

	It("puts the oldest export's exportedLabels and exportedAnnotations on the imports, and reports the others' as a conflict", func(ctx context.Context) {
		ns := "mcs-exported-meta"
		provide(ctx, "member1", ns, "api", 80, "10.1.0.9")
		provide(ctx, "member2", ns, "api", 80, "10.2.0.9")
		exportIn(ctx, "member1", ns, "api")
		exp1 := &mcsv1alpha1.ServiceExport{}
		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, exp1)).To(Succeed())
		patch := client.MergeFrom(exp1.DeepCopy())
		exp1.Spec.ExportedLabels = map[string]string{"tier": "web"}
		exp1.Spec.ExportedAnnotations = map[string]string{"owner": "team-a"}
		Expect(env.Members["member1"].Patch(ctx, exp1, patch)).To(Succeed())
		Eventually(func() error {
			return env.Members["member2"].Create(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Labels: managed},
				Spec: mcsv1alpha1.ServiceExportSpec{ExportedLabels: map[string]string{"tier": "api"}, ExportedAnnotations: map[string]string{"owner": "team-a"}}})
		}).WithContext(ctx).Should(Succeed())

		imp := &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}}
		Eventually(func(g Gomega) {
			g.Expect(env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(imp), imp)).To(Succeed())
			g.Expect(imp.Labels).To(HaveKeyWithValue("tier", "web"))
			g.Expect(imp.Labels).To(HaveKeyWithValue(mcs.ManagedByLabel, mcs.ManagedByValue))
			g.Expect(imp.Annotations).To(HaveKeyWithValue("owner", "team-a"))
			c := exportCondition(ctx, g, "member2", ns, "api", string(mcsv1alpha1.ServiceExportConditionConflict))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(string(mcsv1alpha1.ServiceExportReasonLabelsConflict)))
		}).WithContext(ctx).Should(Succeed())

		By("a label no longer exported leaves the imports")
		Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(exp1), exp1)).To(Succeed())
		patch = client.MergeFrom(exp1.DeepCopy())
		exp1.Spec.ExportedLabels = nil
		Expect(env.Members["member1"].Patch(ctx, exp1, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(imp), imp)).To(Succeed())
			g.Expect(imp.Labels).NotTo(HaveKey("tier"))
			g.Expect(imp.Annotations).To(HaveKeyWithValue("owner", "team-a"))
		}).WithContext(ctx).Should(Succeed())
	})

	It("never takes over or deletes a consumer's object of the same name that Flotilla did not create", func(ctx context.Context) {
		ns := "mcs-foreign"
		memberNamespace(ctx, "member3", ns)
		users := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "derived-api", Labels: map[string]string{"owner": "user"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1234}}}}
		Expect(env.Members["member3"].Create(ctx, users)).To(Succeed())
		provide(ctx, "member1", ns, "api", 80, "10.1.1.1")
		exportIn(ctx, "member1", ns, "api")
		// The rest of member3's import is written; the user's Service is not.
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "api") }).
			WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.1.1"}}))
		Consistently(func(g Gomega) {
			s := &corev1.Service{}
			g.Expect(env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(users), s)).To(Succeed())
			g.Expect(s.Labels).To(Equal(map[string]string{"owner": "user"}))
			g.Expect(s.Spec.Ports).To(HaveLen(1))
			g.Expect(s.Spec.Ports[0].Port).To(BeEquivalentTo(1234))
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Members["member1"].Delete(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}})).To(Succeed())
		Eventually(gone(ctx, "member3", &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}})).WithContext(ctx).Should(BeTrue())
		Consistently(func() error {
			return env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(users), &corev1.Service{})
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("MultiClusterService", func() {
	It("imports member1's Service into member2 only, reports LoadBalancer as not supported, and cleans up on deletion", func(ctx context.Context) {
		ns := "mcs-karmada"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		provide(ctx, "member1", ns, "shop", 80, "10.1.2.1")
		m := &networkingv1alpha1.MultiClusterService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
			Spec: networkingv1alpha1.MultiClusterServiceSpec{
				Types:            []networkingv1alpha1.ExposureType{networkingv1alpha1.ExposureTypeCrossCluster, networkingv1alpha1.ExposureTypeLoadBalancer},
				ProviderClusters: []networkingv1alpha1.ClusterSelector{{Name: "member1"}},
				ConsumerClusters: []networkingv1alpha1.ClusterSelector{{Name: "member2"}},
			}}
		Expect(env.Host.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member2", ns, "shop") }).
			WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.2.1"}}))
		Consistently(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "shop") }).WithContext(ctx).Should(BeEmpty())
		Expect(gone(ctx, "member3", &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})()).To(BeTrue())

		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
			applied := meta.FindStatusCondition(m.Status.Conditions, networkingv1alpha1.MCSConditionServiceApplied)
			g.Expect(applied).NotTo(BeNil())
			g.Expect(applied.Status).To(Equal(metav1.ConditionTrue), applied.Message)
			lb := meta.FindStatusCondition(m.Status.Conditions, networkingv1alpha1.MCSConditionLoadBalancerSupported)
			g.Expect(lb).NotTo(BeNil())
			g.Expect(lb.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(lb.Reason).To(Equal(networkingv1alpha1.MCSReasonNotSupported))
			g.Expect(env.EventReasons(ctx, g, m)).To(ContainElement(mcscontroller.EventReasonLoadBalancerNotSupported))
		}).WithContext(ctx).Should(Succeed())

		By("a consumer that is not named any more loses the import")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
		m.Spec.ConsumerClusters = []networkingv1alpha1.ClusterSelector{{Name: "member3"}}
		Expect(env.Host.Update(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "shop") }).
			WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.2.1"}}))
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member2", ns, "shop") }).WithContext(ctx).Should(BeEmpty())

		By("deleting the MultiClusterService removes what it derived")
		Expect(env.Host.Delete(ctx, m)).To(Succeed())
		Eventually(gone(ctx, "member3", &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})).WithContext(ctx).Should(BeTrue())
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "shop") }).WithContext(ctx).Should(BeEmpty())
		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &corev1.Service{})).To(Succeed())
	})

	It("derives nothing for LoadBalancer alone or without providers, and says why", func(ctx context.Context) {
		ns := "mcs-nothing"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		provide(ctx, "member1", ns, "lb", 80, "10.1.4.1")
		lbOnly := &networkingv1alpha1.MultiClusterService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lb"},
			Spec: networkingv1alpha1.MultiClusterServiceSpec{Types: []networkingv1alpha1.ExposureType{networkingv1alpha1.ExposureTypeLoadBalancer}}}
		noProvider := &networkingv1alpha1.MultiClusterService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"},
			Spec: networkingv1alpha1.MultiClusterServiceSpec{Types: []networkingv1alpha1.ExposureType{networkingv1alpha1.ExposureTypeCrossCluster}}}
		Expect(env.Host.Create(ctx, lbOnly)).To(Succeed())
		Expect(env.Host.Create(ctx, noProvider)).To(Succeed())
		for m, reason := range map[*networkingv1alpha1.MultiClusterService]string{
			lbOnly: networkingv1alpha1.MCSReasonNotSupported, noProvider: networkingv1alpha1.MCSReasonNoProviders} {
			Eventually(func(g Gomega) {
				g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
				applied := meta.FindStatusCondition(m.Status.Conditions, networkingv1alpha1.MCSConditionServiceApplied)
				g.Expect(applied).NotTo(BeNil())
				g.Expect(applied.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(applied.Reason).To(Equal(reason))
			}).WithContext(ctx).Should(Succeed(), m.Name)
		}
		Expect(env.EventReasons(ctx, Default, lbOnly)).To(ContainElement(mcscontroller.EventReasonLoadBalancerNotSupported))
		Consistently(func(g Gomega) {
			for _, m := range []string{"member1", "member2", "member3"} {
				for _, name := range []string{"lb", "ghost"} {
					g.Expect(imported(ctx, g, m, ns, name)).To(BeEmpty())
					g.Expect(gone(ctx, m, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})()).To(BeTrue())
				}
			}
		}).WithContext(ctx).Should(Succeed())
	})

	It("rejects an unknown type and an empty type list with the schema's message", func(ctx context.Context) {
		for _, types := range [][]any{{"Mesh"}, {}} {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": networkingv1alpha1.GroupVersion.String(), "kind": "MultiClusterService",
				"metadata": map[string]any{"namespace": "default", "name": fmt.Sprintf("bad-%d", len(types))},
				"spec":     map[string]any{"types": types},
			}}
			err := env.Host.Create(ctx, u)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("spec.types"))
		}
	})
})

var _ = Describe("What the controller keeps of a service", func() {
	It("is forgotten when the service goes: its plan and every member's write result", func(ctx context.Context) {
		ns := "mcs-forget"
		var keys []types.NamespacedName
		for i := range 3 {
			name := fmt.Sprintf("churn-%d", i)
			provide(ctx, "member1", ns, name, 80, fmt.Sprintf("10.1.9.%d", i+1))
			exportIn(ctx, "member1", ns, name)
			keys = append(keys, types.NamespacedName{Namespace: ns, Name: name})
		}
		for _, key := range keys {
			Eventually(func(g Gomega) {
				g.Expect(imported(ctx, g, "member3", ns, key.Name)).To(HaveKey("member1"))
				plan, results := reconciler.Remembers(key)
				g.Expect(plan).To(BeTrue())
				g.Expect(results).To(Equal(3), "one result per consumer")
			}).WithContext(ctx).Should(Succeed())
		}

		for _, key := range keys {
			Expect(env.Members["member1"].Delete(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
			Expect(env.Members["member1"].Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
		}
		for _, key := range keys {
			Eventually(func(g Gomega) {
				g.Expect(imported(ctx, g, "member3", ns, key.Name)).To(BeEmpty())
				plan, results := reconciler.Remembers(key)
				g.Expect(plan).To(BeFalse(), "plan of %s", key)
				g.Expect(results).To(BeZero(), "write results of %s", key)
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		}
	})
})

var _ = Describe("A member leaving", func() {
	It("takes its endpoints out of every consumer, and brings them back when it joins again", func(ctx context.Context) {
		ns := "mcs-leave"
		provide(ctx, "member1", ns, "db", 5432, "10.1.3.1")
		exportIn(ctx, "member1", ns, "db")
		provide(ctx, "member2", ns, "db", 5432, "10.2.3.1")
		exportIn(ctx, "member2", ns, "db")
		both := map[string][]string{"member1": {"10.1.3.1"}, "member2": {"10.2.3.1"}}
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "db") }).WithContext(ctx).Should(Equal(both))

		By("deleting the Cluster member2")
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}}
		Expect(env.Host.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKeyFromObject(c), c)) }).WithContext(ctx).Should(BeTrue())
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "db") }).
			WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.3.1"}}))
		Eventually(func() int { return reconciler.RemembersMember("member2") }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(BeZero(), "write results, CRDs and namespaces kept of the deleted member2")
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member1", ns, "db") }).
			WithContext(ctx).Should(Equal(map[string][]string{"member1": {"10.1.3.1"}}))

		By("joining member2 again")
		m := env.Fleet.Member("member2")
		_, err := join.Join(ctx, join.Options{Name: "member2", Host: env.Fleet.Host.RESTConfig(), Member: m.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		env.WaitClustersReady(ctx, "member2")
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "db") }).WithContext(ctx).Should(Equal(both))

		By("deleting member2's Service: its export is no longer valid and provides nothing")
		Expect(env.Members["member2"].Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(imported(ctx, g, "member3", ns, "db")).To(Equal(map[string][]string{"member1": {"10.1.3.1"}}))
			v := exportCondition(ctx, g, "member2", ns, "db", string(mcsv1alpha1.ServiceExportConditionValid))
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(v.Reason).To(Equal(string(mcsv1alpha1.ServiceExportReasonNoService)))
		}).WithContext(ctx).Should(Succeed())

		for _, m := range []string{"member1", "member2"} {
			Expect(env.Members[m].Delete(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
		}
		Eventually(func(g Gomega) map[string][]string { return imported(ctx, g, "member3", ns, "db") }).WithContext(ctx).Should(BeEmpty())
	})
})
