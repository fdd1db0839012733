package localcluster

// A stand-in for metrics-server in full clusters. kwok's nodes run no containers and
// metrics-server cannot scrape them, so the process that owns the fleet serves
// metrics.k8s.io/v1beta1 itself: PodMetrics and NodeMetrics computed from simulated usage,
// on 127.0.0.1, registered through the aggregation layer as metrics-server would be (an
// APIService pointing at a Service). The member's kube-apiserver proxies to it with its
// front-proxy client certificate, which the server verifies against the cluster CA and the
// name front-proxy-client; the user is in the request headers (unused: the data is public
// to anyone the apiserver let through, as metrics-server's RBAC would allow).
//
// Simulated usage comes from kwok's ClusterResourceUsage objects (kwok.x-k8s.io/v1alpha1,
// cluster-scoped; the CRD is installed with a schema that keeps kwok's fields): each selects
// pods by namespace and name (matchNamespaces, matchNames; empty selects all) and gives a
// container (containerName; empty: every container) a usage per resource
// (usage.cpu.value: "200m"). Only "value" is read, not kwok's CEL "expression". A pod no
// object selects uses nothing. A Node's usage is the sum of its running pods'.
//
// A detached fleet (`fleet up`, `make demo`) outlives the process that started it, so it
// serves no metrics.k8s.io (the APIService is removed).
//
// kube-apiserver reaches 127.0.0.1 only through a Service of type ExternalName (localhost):
// Endpoints refuse loopback addresses and there is no kube-proxy.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FrontProxyUser is the name in the front-proxy client certificate kube-apiserver presents to
// aggregated servers.
const FrontProxyUser = "front-proxy-client"

// MetricsServiceName is the Service (kube-system) the metrics APIService points at.
const MetricsServiceName = "metrics-server"

// ClusterResourceUsageGVR is kwok's simulated usage, read by the metrics stand-in.
var ClusterResourceUsageGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterresourceusages"}

// frontProxyPaths are the proxy client's certificate and key.
func frontProxyPaths(files pkiFiles) (cert, key string) {
	dir := strings.TrimSuffix(files.CACert, "ca.crt")
	return dir + "front-proxy-client.crt", dir + "front-proxy-client.key"
}

// ensureFrontProxy writes the front-proxy client certificate (signed by the cluster CA) when
// the state dir has none (clusters made by older versions).
func ensureFrontProxy(files pkiFiles) error {
	certPath, keyPath := frontProxyPaths(files)
	if _, err := os.Stat(certPath); err == nil {
		return nil
	}
	_, err := issue(files, certPath, keyPath, &x509.Certificate{Subject: pkix.Name{CommonName: FrontProxyUser},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

// issue signs template with the cluster CA and writes the certificate and key.
func issue(files pkiFiles, certPath, keyPath string, template *x509.Certificate) (tls.Certificate, error) {
	ca, err := tls.LoadX509KeyPair(files.CACert, files.CAKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	template.NotBefore, template.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(certValidity)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	_, der, err := signCert(template, caCert, key.Public(), ca.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER)
	if certPath != "" {
		if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
			return tls.Certificate{}, err
		}
		if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// aggregationArgs are kube-apiserver's flags for the aggregation layer.
func (c *Cluster) aggregationArgs() []string {
	cert, key := frontProxyPaths(c.files)
	return []string{
		"--requestheader-client-ca-file=" + c.files.CACert,
		"--requestheader-allowed-names=" + FrontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + cert,
		"--proxy-client-key-file=" + key,
	}
}

// metricsServer is the running stand-in.
type metricsServer struct {
	srv  *http.Server
	port int
}

// startMetrics serves metrics.k8s.io for the cluster and registers it.
func (c *Cluster) startMetrics(ctx context.Context) error {
	cfg := c.RESTConfig()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := installUsageCRD(ctx, cfg); err != nil {
		return fmt.Errorf("installing the ClusterResourceUsage CRD: %w", err)
	}
	host := MetricsServiceName + ".kube-system.svc"
	serving, err := issue(c.files, "", "", &x509.Certificate{Subject: pkix.Name{CommonName: host}, DNSNames: []string{host, "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("metrics serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAData)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h := &metricsHandler{pods: cs, usage: dyn, now: time.Now}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
		VerifyPeerCertificate: func(_ [][]byte, chains [][]*x509.Certificate) error {
			if len(chains) == 0 || chains[0][0].Subject.CommonName != FrontProxyUser {
				return errors.New("only kube-apiserver's front proxy may call")
			}
			return nil
		}}}
	port := ln.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	c.mu.Lock()
	c.metrics = &metricsServer{srv: srv, port: port}
	c.mu.Unlock()
	if err := registerMetrics(ctx, cfg, cs, port, c.CAData); err != nil {
		return fmt.Errorf("registering metrics.k8s.io: %w", err)
	}
	c.log.printf("metrics.k8s.io stand-in on 127.0.0.1:%d", port)
	return nil
}

func (c *Cluster) stopMetrics() {
	c.mu.Lock()
	m := c.metrics
	c.metrics = nil
	c.mu.Unlock()
	if m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = m.srv.Shutdown(ctx)
	}
}

// installUsageCRD installs kwok's ClusterResourceUsage kind, its spec kept as written.
func installUsageCRD(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	_ = apiextensionsv1.AddToScheme(c.Scheme())
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "clusterresourceusages.kwok.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "kwok.x-k8s.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusterresourceusages", Singular: "clusterresourceusage", Kind: "ClusterResourceUsage", ListKind: "ClusterResourceUsageList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", XPreserveUnknownFields: ptrTo(true)},
						"status": {Type: "object", XPreserveUnknownFields: ptrTo(true)},
					}}}}}}}
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), cur); err == nil && crdEstablished(cur) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not established after 30s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// registerMetrics points metrics.k8s.io/v1beta1 at the stand-in: an ExternalName Service
// (localhost) and an APIService with the port and the CA.
func registerMetrics(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, port int, ca []byte) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: MetricsServiceName},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}}}}
	if cur, err := cs.CoreV1().Services("kube-system").Get(ctx, svc.Name, metav1.GetOptions{}); err == nil {
		cur.Spec.Ports = svc.Spec.Ports
		if _, err := cs.CoreV1().Services("kube-system").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if _, err := cs.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io", "labels": map[string]any{"app.kubernetes.io/managed-by": "flotilla-localcluster"}},
		"spec": map[string]any{"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": ca, "service": map[string]any{"namespace": "kube-system", "name": MetricsServiceName, "port": int64(port)}},
	}}
	if cur, err := dyn.Resource(gvr).Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
		obj.SetResourceVersion(cur.GetResourceVersion())
		_, err = dyn.Resource(gvr).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}
	_, err = dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// unregisterMetrics deletes the metrics APIService a fleet that owned its stand-in left.
func unregisterMetrics(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	cur, err := dyn.Resource(gvr).Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && cur.GetLabels()["app.kubernetes.io/managed-by"] != "flotilla-localcluster") {
		return nil
	}
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(dyn.Resource(gvr).Delete(ctx, cur.GetName(), metav1.DeleteOptions{}))
}

// metricsHandler serves metrics.k8s.io/v1beta1.
type metricsHandler struct {
	pods  kubernetes.Interface
	usage dynamic.Interface
	now   func() time.Time
}

const metricsPrefix = "/apis/metrics.k8s.io/v1beta1"

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/healthz" || p == "/readyz" || p == "/livez":
		_, _ = w.Write([]byte("ok"))
		return
	case p == "/apis":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group()}})
		return
	case p == "/apis/metrics.k8s.io":
		g := group()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, g)
		return
	case p == metricsPrefix:
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "metrics.k8s.io/v1beta1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"get", "list"}},
				{Name: "nodes", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
			}})
		return
	}
	if r.Method != http.MethodGet || !strings.HasPrefix(p, metricsPrefix+"/") {
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(strings.TrimPrefix(p, metricsPrefix+"/"), "/")
	var ns, kind, name string
	switch {
	case len(parts) >= 3 && parts[0] == "namespaces" && parts[2] == "pods":
		ns, kind = parts[1], "pods"
		if len(parts) == 4 {
			name = parts[3]
		}
	case parts[0] == "pods" || parts[0] == "nodes":
		kind = parts[0]
		if len(parts) == 2 {
			name = parts[1]
		}
	default:
		http.NotFound(w, r)
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("labelSelector: "+err.Error()))
		return
	}
	pods, nodes, err := h.compute(r.Context(), ns, sel, kind == "nodes")
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	if kind == "pods" {
		if name != "" {
			for _, pm := range pods {
				if pm.Name == name {
					pm.TypeMeta = metav1.TypeMeta{Kind: "PodMetrics", APIVersion: "metrics.k8s.io/v1beta1"}
					writeJSON(w, pm)
					return
				}
			}
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, name))
			return
		}
		writeJSON(w, metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}, Items: pods})
		return
	}
	if name != "" {
		for _, nm := range nodes {
			if nm.Name == name {
				nm.TypeMeta = metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: "metrics.k8s.io/v1beta1"}
				writeJSON(w, nm)
				return
			}
		}
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "nodes"}, name))
		return
	}
	writeJSON(w, metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}, Items: nodes})
}

func group() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}
	return metav1.APIGroup{Name: "metrics.k8s.io", Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// compute returns the metrics of the running pods of ns (all when "") matching sel, and of
// the nodes (sel applies to nodes then).
func (h *metricsHandler) compute(ctx context.Context, ns string, sel labels.Selector, nodes bool) ([]metricsv1beta1.PodMetrics, []metricsv1beta1.NodeMetrics, error) {
	opts := metav1.ListOptions{}
	if !nodes {
		opts.LabelSelector = sel.String()
	}
	list, err := h.pods.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	usages, err := h.usage.Resource(ClusterResourceUsageGVR).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	var rules []unstructured.Unstructured
	if usages != nil {
		rules = usages.Items
	}
	now := h.now()
	// The usage is what the objects declare now, not an average: a short window, so that a
	// pod's first metrics count soon after it is Ready (the HPA distrusts CPU metrics whose
	// window began before readiness).
	window := metav1.Duration{Duration: time.Second}
	var out []metricsv1beta1.PodMetrics
	byNode := map[string]corev1.ResourceList{}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" {
			continue
		}
		pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels,
			CreationTimestamp: metav1.Time{Time: now}}, Timestamp: metav1.Time{Time: now}, Window: window}
		for _, c := range pod.Spec.Containers {
			u := PodUsage(rules, pod.Namespace, pod.Name, c.Name)
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: u})
			nu := byNode[pod.Spec.NodeName]
			if nu == nil {
				nu = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
				byNode[pod.Spec.NodeName] = nu
			}
			for k, q := range u {
				sum := nu[k]
				sum.Add(q)
				nu[k] = sum
			}
		}
		out = append(out, pm)
	}
	if !nodes {
		return out, nil, nil
	}
	nl, err := h.pods.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, nil, err
	}
	var nms []metricsv1beta1.NodeMetrics
	for _, n := range nl.Items {
		u := byNode[n.Name]
		if u == nil {
			u = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
		}
		nms = append(nms, metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.Time{Time: now}},
			Timestamp: metav1.Time{Time: now}, Window: window, Usage: u})
	}
	return out, nms, nil
}

// PodUsage is a container's simulated usage: the first ClusterResourceUsage (by name) that
// selects the pod and has a usage for the container (containerName empty: every container).
// Resources it does not name are 0 for cpu and memory.
func PodUsage(rules []unstructured.Unstructured, namespace, pod, container string) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
	for _, r := range rules {
		if !selects(r, namespace, pod) {
			continue
		}
		usages, _, _ := unstructured.NestedSlice(r.Object, "spec", "usages")
		for _, u := range usages {
			um, ok := u.(map[string]any)
			if !ok {
				continue
			}
			if cn, _ := um["containerName"].(string); cn != "" && cn != container {
				continue
			}
			res, _ := um["usage"].(map[string]any)
			for name, v := range res {
				vm, _ := v.(map[string]any)
				s := fmt.Sprint(vm["value"])
				if q, err := resource.ParseQuantity(s); err == nil {
					out[corev1.ResourceName(name)] = q
				}
			}
			return out
		}
	}
	return out
}

// selects says whether a ClusterResourceUsage's spec.selector selects the pod.
func selects(r unstructured.Unstructured, namespace, pod string) bool {
	nss, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "selector", "matchNamespaces")
	names, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "selector", "matchNames")
	in := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	return in(nss, namespace) && in(names, pod)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	w.Header().Set("Content-Type", "application/json")
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
