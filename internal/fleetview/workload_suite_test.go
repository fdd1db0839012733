package fleetview_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The members are apiserver-only: no kubelet runs their pods. The pods are written by hand,
// and member1's node points its kubelet endpoint at a loopback HTTPS server that answers
// /containerLogs as a kubelet does, so that `logs` goes through the member apiserver's real
// log proxy; member2's pods are on a node that does not exist, so the apiserver refuses.
// eventsAt is the "now" the suite's events are dated from and printed at, in whole seconds
// (as events store their times), so their ages print the same however long the suite runs.
var eventsAt = time.Now().Truncate(time.Second)

var _ = Describe("logs, events and describe of a workload", Ordered, func() {
	const ns = "team"
	var kubeletRequests chan string

	BeforeAll(func(ctx SpecContext) {
		kubeletRequests = make(chan string, 100)
		kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			kubeletRequests <- r.URL.Path + "?" + r.URL.RawQuery
			// /containerLogs/NAMESPACE/POD/CONTAINER
			parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
			if len(parts) != 3 {
				http.NotFound(w, r)
				return
			}
			lines := []string{}
			for i := 1; i <= 5; i++ {
				lines = append(lines, fmt.Sprintf("%s line %d", parts[2], i))
			}
			if t, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && t < len(lines) {
				lines = lines[len(lines)-t:]
			}
			fmt.Fprint(w, strings.Join(lines, "\n")+"\n")
		}))
		DeferCleanup(kubelet.Close)
		port := kubelet.Listener.Addr().(*net.TCPAddr).Port

		env.TemplateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, fleettest.Deployment(ns, "api", 2))).To(Succeed())
		Expect(env.Host.Create(ctx, fleettest.Deployment(ns, "ghost", 1))).To(Succeed())

		for i, m := range []string{"member1", "member2"} {
			mc := env.Members[m]
			Expect(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			Expect(mc.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})).To(Succeed())
			dep := fleettest.Deployment(ns, "api", 2)
			Expect(mc.Create(ctx, dep)).To(Succeed())
			dep.Status = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: int32(1 - i), AvailableReplicas: int32(1 - i)}
			Expect(mc.Status().Update(ctx, dep)).To(Succeed())

			node := "node-" + m
			if m == "member1" {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
				Expect(mc.Create(ctx, n)).To(Succeed())
				n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
				n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
				Expect(mc.Status().Update(ctx, n)).To(Succeed())
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("api-%s-x", m), Labels: map[string]string{"app": "api"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-7c9", UID: types.UID("rs-" + m)}}},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: fleettest.Image}, {Name: "side", Image: fleettest.Image}}}}
			Expect(mc.Create(ctx, p)).To(Succeed())
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Ready: i == 0, RestartCount: int32(i)}, {Name: "side", Ready: i == 0}}}
			Expect(mc.Status().Update(ctx, p)).To(Succeed())
			// A pod of another app, which no view of api shows.
			other := p.DeepCopy()
			other.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "other-" + m, Labels: map[string]string{"app": "other"}}
			Expect(mc.Create(ctx, other)).To(Succeed())

			now := metav1.NewTime(eventsAt.Add(-time.Duration(10-i) * time.Minute))
			for _, e := range []corev1.Event{
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-scaled-" + m}, InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "api"},
					Type: "Normal", Reason: "ScalingReplicaSet", Message: "Scaled up replica set api-7c9 to 1 in " + m},
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-pulled-" + m}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name},
					Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container app in " + m},
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs-" + m}, InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: ns, Name: "api-7c9"},
					Type: "Normal", Reason: "SuccessfulCreate", Message: "Created pod: " + p.Name},
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-" + m}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "other-" + m},
					Type: "Normal", Reason: "Pulled", Message: "not about api"},
			} {
				e.FirstTimestamp, e.LastTimestamp, e.Count = now, now, 1
				Expect(mc.Create(ctx, &e)).To(Succeed())
			}
		}
	})

	req := func(kind, name string) fleetview.WorkloadRequest {
		return fleetview.WorkloadRequest{Kind: kind, Name: name, Namespace: ns, Clusters: []string{"member1", "member2"}}
	}

	It("prints each container's log with its cluster, pod and container, through the members' log proxy", func(ctx SpecContext) {
		r := req("deploy", "api")
		r.Logs = &fleetview.LogOptions{TailLines: 2}
		start := time.Now()
		res, err := host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		var out, errOut bytes.Buffer
		Expect(fleetview.PrintLogs(&out, &errOut, res)).To(Succeed())
		GinkgoWriter.Printf("logs in %s:\n%s--- stderr:\n%s", time.Since(start), out.String(), errOut.String())
		Expect(out.String()).To(Equal("[member1/api-member1-x/app] app line 4\n[member1/api-member1-x/app] app line 5\n" +
			"[member1/api-member1-x/side] side line 4\n[member1/api-member1-x/side] side line 5\n"))
		// member2's pods are on a node that does not exist: its apiserver says so, per container.
		Expect(lines(errOut.String())).To(HaveLen(2))
		Expect(errOut.String()).To(ContainSubstring("error: [member2/api-member2-x/app] "))
		Expect(errOut.String()).To(ContainSubstring(`"node-member2" not found`))
		Expect(res.Check()).To(Succeed())
		Expect(kubeletRequests).To(Receive(Equal("/containerLogs/team/api-member1-x/app?limitBytes=8388608&tailLines=2")))

		// Only member2: it answers, but no log can be read, which the exit code says.
		r.Clusters = []string{"member2"}
		res, err = host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Check()).To(MatchError("none of the 2 containers' logs could be read"))
		r.Clusters = []string{"member1", "member2"}

		r.Logs = &fleetview.LogOptions{Container: "side", TailLines: -1}
		r.Clusters = []string{"member1"}
		res, err = host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		out.Reset()
		errOut.Reset()
		Expect(fleetview.PrintLogs(&out, &errOut, res)).To(Succeed())
		Expect(lines(out.String())).To(HaveLen(5))
		Expect(out.String()).NotTo(ContainSubstring("/app]"))

		r.Logs = &fleetview.LogOptions{Container: "nope", TailLines: -1}
		res, err = host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		out.Reset()
		errOut.Reset()
		Expect(fleetview.PrintLogs(&out, &errOut, res)).To(Succeed())
		Expect(out.String()).To(BeEmpty())
		Expect(errOut.String()).To(Equal("error: [member1/api-member1-x/nope] container nope is not valid for pod api-member1-x: its containers are app, side\n"))
	})

	It("selects pods by label without a workload", func(ctx SpecContext) {
		res, err := host.Workload(ctx, fleetview.WorkloadRequest{Selector: "app=other", Namespace: ns, Clusters: []string{"member1", "member2"},
			Logs: &fleetview.LogOptions{TailLines: 1}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Members).To(HaveLen(2))
		Expect(res.Members[0].Pods).To(HaveLen(1))
		Expect(res.Members[0].Pods[0].Name).To(Equal("other-member1"))
		Expect(res.Check()).To(Succeed())
		_, err = host.Workload(ctx, fleetview.WorkloadRequest{Selector: "app in (", Namespace: ns})
		Expect(err).To(MatchError(ContainSubstring(`invalid label selector "app in ("`)))
	})

	It("lists the events of the workload, its pods and their owners, merged across members", func(ctx SpecContext) {
		r := req("deployment", "api")
		r.Events = true
		res, err := host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintEvents(&out, res, "", eventsAt)).To(Succeed())
		GinkgoWriter.Printf("events:\n%s", out.String())
		Expect(lines(out.String())).To(Equal([]string{
			"CLUSTER LAST SEEN TYPE REASON OBJECT MESSAGE",
			"member1 10m Warning BackOff pod/api-member1-x Back-off restarting failed container app in member1",
			"member1 10m Normal ScalingReplicaSet deployment/api Scaled up replica set api-7c9 to 1 in member1",
			"member1 10m Normal SuccessfulCreate replicaset/api-7c9 Created pod: api-member1-x",
			"member2 9m Warning BackOff pod/api-member2-x Back-off restarting failed container app in member2",
			"member2 9m Normal ScalingReplicaSet deployment/api Scaled up replica set api-7c9 to 1 in member2",
			"member2 9m Normal SuccessfulCreate replicaset/api-7c9 Created pod: api-member2-x",
		}))

		// Without a workload: every event of the namespace, here of all namespaces.
		res, err = host.Workload(ctx, fleetview.WorkloadRequest{Events: true, AllNamespaces: true, Clusters: []string{"member1"}})
		Expect(err).NotTo(HaveOccurred())
		out.Reset()
		Expect(fleetview.PrintEvents(&out, res, "", eventsAt)).To(Succeed())
		Expect(out.String()).To(ContainSubstring("member1   team        10m"))
		Expect(out.String()).To(ContainSubstring("not about api"))
	})

	It("describes the workload in each member: replicas, pods and events", func(ctx SpecContext) {
		r := req("deploy", "api")
		r.Events = true
		res, err := host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintWorkloadDescription(&out, res, time.Now())).To(Succeed())
		GinkgoWriter.Printf("describe:\n%s", out.String())
		ls := lines(out.String())
		Expect(ls[0]).To(Equal("Deployment team/api: in 2 of 2 member clusters"))
		Expect(ls).To(ContainElements(
			"Cluster: member1",
			"Replicas: 2 desired | 1 updated | 1 ready | 1 available",
			MatchRegexp(`^api-member1-x 2/2 Running 0 node-member1 \d+s$`),
			"Cluster: member2",
			"Replicas: 2 desired | 1 updated | 0 ready | 0 available",
			MatchRegexp(`^api-member2-x 0/2 Running 1 node-member2 \d+s$`),
			"Events (3):",
		))
		Expect(out.String()).NotTo(ContainSubstring("other-"))
	})

	It("keeps a member that does not answer from holding up the others", func(ctx SpecContext) {
		addCluster(ctx, "mute", "https://"+silent.Addr().String())
		r := req("deploy", "api")
		r.Clusters = []string{"member1", "mute"}
		r.MemberTimeout = 4 * time.Second // generous: member1 must answer within it on a loaded machine
		r.Events = true
		r.Logs = &fleetview.LogOptions{TailLines: 1}
		start := time.Now()
		res, err := host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("member1 and a silent member, timeout 4s: answered in %s\n", time.Since(start))
		Expect(res.Members[0].Err).NotTo(HaveOccurred())
		Expect(res.Members[0].Logs).To(HaveLen(2))
		Expect(res.Members[1].Err).To(MatchError("no answer within 4s"))
		Expect(res.Check()).To(Succeed())
		var out bytes.Buffer
		Expect(fleetview.PrintEvents(&out, res, "", time.Now())).To(Succeed())
		Expect(lines(out.String())).To(ContainElement("mute error: no answer within 4s"))

		r.Clusters = []string{"mute", "unknown"}
		res, err = host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Members[1].Err).To(MatchError(`no Cluster named "unknown" in the host`))
		Expect(res.Check()).To(MatchError("all 2 member clusters failed"))
	})

	It("fails clearly on a workload the host or the members do not have", func(ctx SpecContext) {
		_, err := host.Workload(ctx, req("deploy", "nope"))
		Expect(err).To(MatchError(`deployments.apps "nope" not found in the host (namespace team)`))
		_, err = host.Workload(ctx, req("frobs", "x"))
		Expect(err).To(MatchError(ContainSubstring(`doesn't have a resource type "frobs"`)))
		_, err = host.Workload(ctx, req("clusterrole", "x"))
		Expect(err).To(MatchError("clusterroles is cluster-scoped: it has no pods"))
		_, err = host.Workload(ctx, fleetview.WorkloadRequest{Namespace: ns})
		Expect(err).To(MatchError("name a workload (KIND/NAME) or select pods with -l"))
		cm := fleettest.ConfigMap(ns, "settings", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		_, err = host.Workload(ctx, req("cm", "settings"))
		Expect(err).To(MatchError("ConfigMap settings has no spec.selector: select its pods with -l"))

		res, err := host.Workload(ctx, req("deploy", "ghost"))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Check()).To(MatchError("Deployment team/ghost is in none of the member clusters read (member1, member2)"))
	})

	It("reads a pod by name", func(ctx SpecContext) {
		// The template of a bare pod lives in the host as well; the members' copy is read.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-member1-x"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: fleettest.Image}}}}
		Expect(env.Host.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})).To(Succeed())
		Expect(env.Host.Create(ctx, p)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, p))).To(Succeed()) })
		r := req("pod", "api-member1-x")
		r.Clusters = []string{"member1"}
		r.Logs = &fleetview.LogOptions{Container: "app", TailLines: 1}
		res, err := host.Workload(ctx, r)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Members[0].Err).NotTo(HaveOccurred())
		Expect(res.Members[0].Logs).To(HaveLen(1))
		Expect(string(res.Members[0].Logs[0].Data)).To(Equal("app line 5\n"))
	})
})
