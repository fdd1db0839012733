package interpreterwebhook_test

import (
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/interpreterwebhook"
	"github.com/flotilla-io/flotilla/internal/testing/interpreterhook"
)

var workloadGVK = schema.GroupVersionKind{Group: "workload.example.io", Version: "v1alpha1", Kind: "Workload"}

func workload(replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload",
		"metadata": map[string]any{"name": "nginx", "namespace": "shop"},
		"spec":     map[string]any{"replicas": replicas, "paused": false},
	}}
	return u
}

func config(name string, hooks ...configv1alpha1.ResourceInterpreterWebhook) *configv1alpha1.ResourceInterpreterWebhookConfiguration {
	return &configv1alpha1.ResourceInterpreterWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func hook(name, url string, ca []byte, ops ...configv1alpha1.InterpreterOperation) configv1alpha1.ResourceInterpreterWebhook {
	return configv1alpha1.ResourceInterpreterWebhook{
		Name:                       name,
		ClientConfig:               admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: ca},
		Rules:                      []configv1alpha1.RuleWithOperations{{Operations: ops, Rule: configv1alpha1.Rule{APIGroups: []string{"workload.example.io"}, APIVersions: []string{"*"}, Kinds: []string{"Workload"}}}},
		InterpreterContextVersions: []string{"v1alpha1"},
		TimeoutSeconds:             ptr.To[int32](1),
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   admissionregistrationv1.WebhookClientConfig
		want string
		err  string
	}{
		{"url", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://w.example.com:8443/i")}, "https://w.example.com:8443/i", ""},
		{"service, default port", admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "hook", Namespace: "infra", Path: ptr.To("/interpret")}}, "https://hook.infra.svc:443/interpret", ""},
		{"service wins over url", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://x"), Service: &admissionregistrationv1.ServiceReference{Name: "hook", Namespace: "infra", Port: ptr.To[int32](8443)}}, "https://hook.infra.svc:8443", ""},
		{"http", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://w.example.com/i")}, "", "is not https"},
		{"query", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://w.example.com/i?x=1")}, "", "query or a fragment"},
		{"user", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://u:p@w.example.com/i")}, "", "user"},
		{"no host", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https:///i")}, "", "no host"},
		{"neither", admissionregistrationv1.WebhookClientConfig{}, "", "neither url nor service"},
		{"relative path", admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "h", Namespace: "n", Path: ptr.To("i")}}, "", "must start with /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := interpreterwebhook.Endpoint(tc.cc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestApplyRejects(t *testing.T) {
	r := interpreterwebhook.NewRegistry(interpreterwebhook.Options{})
	for _, tc := range []struct {
		name string
		cfg  *configv1alpha1.ResourceInterpreterWebhookConfiguration
		err  string
	}{
		{"bad CA", config("c", hook("w.example.com", "https://127.0.0.1/", []byte("not PEM"), "*")), `webhook "w.example.com": clientConfig.caBundle holds no PEM certificate`},
		{"no v1alpha1", func() *configv1alpha1.ResourceInterpreterWebhookConfiguration {
			h := hook("w.example.com", "https://127.0.0.1/", nil, "*")
			h.InterpreterContextVersions = []string{"v1"}
			return config("c", h)
		}(), "does not include v1alpha1"},
		{"twice", config("c", hook("w", "https://127.0.0.1/", nil, "*"), hook("w", "https://127.0.0.1/", nil, "*")), "named twice"},
		{"http", config("c", hook("w", "http://127.0.0.1/", nil, "*")), "is not https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Apply(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if _, ok := r.Lookup(workloadGVK); ok {
				t.Fatal("a configuration that does not load is in use")
			}
		})
	}
}

func TestLookupFirstByName(t *testing.T) {
	r := interpreterwebhook.NewRegistry(interpreterwebhook.Options{})
	must(t, r.Apply(config("b", hook("a.example.com", "https://127.0.0.1:1/b", nil, "InterpretReplica", "InterpretHealth"))))
	must(t, r.Apply(config("a", hook("z.example.com", "https://127.0.0.1:1/a", nil, "InterpretReplica"))))
	c, ok := r.Lookup(workloadGVK)
	if !ok || !c.Has(interpreter.OperationGetReplicas) || !c.Has(interpreter.OperationInterpretHealth) || c.Has(interpreter.OperationRetain) {
		t.Fatalf("lookup = %v %v", c, ok)
	}
	hooks := r.Hooks()
	if len(hooks) != 2 || hooks[0].ID() != "a/z.example.com" || hooks[1].ID() != "b/a.example.com" {
		t.Fatalf("hooks %v", hooks)
	}
	if _, ok := r.Lookup(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); ok {
		t.Fatal("a Deployment matched")
	}
	rev := c.Revision()
	must(t, r.Apply(config("a", hook("z.example.com", "https://127.0.0.1:2/a", nil, "InterpretReplica"))))
	c2, _ := r.Lookup(workloadGVK)
	if c2.Revision() == rev {
		t.Fatal("the revision did not change with the URL")
	}
	r.Remove("a")
	r.Remove("b")
	if _, ok := r.Lookup(workloadGVK); ok {
		t.Fatal("removed webhooks are in use")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serve starts a test webhook and a registry using it for every operation.
func serve(t *testing.T, h interpreterhook.Handler) (*interpreterhook.Server, interpreter.Customization, *[]interpreterwebhook.Failure) {
	t.Helper()
	srv, err := interpreterhook.Start(h)
	must(t, err)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	failures := &[]interpreterwebhook.Failure{}
	r := interpreterwebhook.NewRegistry(interpreterwebhook.Options{OnFailure: func(f interpreterwebhook.Failure) {
		mu.Lock()
		defer mu.Unlock()
		*failures = append(*failures, f)
	}})
	must(t, r.Apply(config("examples", hook("workloads.example.com", srv.URL+"/interpreter-workload", srv.CABundle, "*"))))
	c, ok := r.Lookup(workloadGVK)
	if !ok {
		t.Fatal("no webhook for Workload")
	}
	return srv, c, failures
}

func TestOperations(t *testing.T) {
	_, c, failures := serve(t, func(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		ok := &configv1alpha1.ResourceInterpreterResponse{Successful: true}
		switch req.Operation {
		case configv1alpha1.InterpreterOperationInterpretReplica:
			ok.Replicas = ptr.To[int32](3)
			ok.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{Namespace: req.Namespace}
		case configv1alpha1.InterpreterOperationReviseReplica:
			ok.Patch, ok.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "replace", "path": "/spec/replicas", "value": *req.DesiredReplicas})
		case configv1alpha1.InterpreterOperationRetain:
			var observed map[string]any
			must(t, jsonUnmarshal(req.ObservedObject.Raw, &observed))
			ok.Patch, ok.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "replace", "path": "/spec/paused", "value": observed["spec"].(map[string]any)["paused"]})
		case configv1alpha1.InterpreterOperationAggregateStatus:
			ok.Patch, ok.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "add", "path": "/status", "value": map[string]any{"clusters": len(req.AggregatedStatus)}})
		case configv1alpha1.InterpreterOperationInterpretStatus:
			ok.RawStatus = &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2}`)}
		case configv1alpha1.InterpreterOperationInterpretHealth:
			ok.Healthy = ptr.To(req.Name == "nginx")
		case configv1alpha1.InterpreterOperationInterpretDependency:
			ok.Dependencies = []configv1alpha1.DependentObjectReference{{APIVersion: "v1", Kind: "ConfigMap", Namespace: req.Namespace, Name: "conf"}}
		}
		return ok
	})
	n, req, err := c.GetReplicas(workload(5))
	if err != nil || n != 3 || req == nil || req.Namespace != "shop" {
		t.Fatalf("GetReplicas = %d %v %v", n, req, err)
	}
	out, err := c.ReviseReplica(workload(5), 2)
	if err != nil || out.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Fatalf("ReviseReplica = %v %v", out, err)
	}
	observed := workload(5)
	observed.Object["spec"].(map[string]any)["paused"] = true
	out, err = c.Retain(workload(5), observed)
	if err != nil || out.Object["spec"].(map[string]any)["paused"] != true {
		t.Fatalf("Retain = %v %v", out, err)
	}
	st, err := c.AggregateStatus(workload(5), []workv1alpha2.AggregatedStatusItem{{ClusterName: "m1"}, {ClusterName: "m2"}})
	if err != nil || st["clusters"] != int64(2) {
		t.Fatalf("AggregateStatus = %v %v", st, err)
	}
	raw, err := c.ReflectStatus(workload(5))
	if err != nil || string(raw.Raw) != `{"readyReplicas":2}` {
		t.Fatalf("ReflectStatus = %v %v", raw, err)
	}
	healthy, err := c.InterpretHealth(workload(5))
	if err != nil || !healthy {
		t.Fatalf("InterpretHealth = %v %v", healthy, err)
	}
	deps, err := c.GetDependencies(workload(5))
	if err != nil || len(deps) != 1 || deps[0].Name != "conf" {
		t.Fatalf("GetDependencies = %v %v", deps, err)
	}
	if c.Has(interpreter.OperationGetComponents) {
		t.Fatal("components are asked of webhooks")
	}
	if len(*failures) != 0 {
		t.Fatalf("failures: %v", *failures)
	}
}

func TestBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp func(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse
		call func(c interpreter.Customization) error
		err  string
	}{
		{"wrong uid", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			return &configv1alpha1.ResourceInterpreterResponse{UID: "other", Successful: true, Replicas: ptr.To[int32](1)}
		}, replicas, `the response's uid is "other", want the request's`},
		{"unsuccessful", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			return &configv1alpha1.ResourceInterpreterResponse{Successful: false, Status: &configv1alpha1.RequestStatus{Code: 400, Message: "no replicas field"}}
		}, replicas, "the webhook says it failed (code 400): no replicas field"},
		{"no replicas", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			return &configv1alpha1.ResourceInterpreterResponse{Successful: true}
		}, replicas, "the response has no replicas"},
		{"no healthy", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			return &configv1alpha1.ResourceInterpreterResponse{Successful: true}
		}, func(c interpreter.Customization) error { _, err := c.InterpretHealth(workload(1)); return err }, "the response has no healthy"},
		{"patch does not apply", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			r := &configv1alpha1.ResourceInterpreterResponse{Successful: true}
			r.Patch, r.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "replace", "path": "/spec/nothere/x", "value": 1})
			return r
		}, revise, "the response's patch does not apply to the object"},
		{"patch renames", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			r := &configv1alpha1.ResourceInterpreterResponse{Successful: true}
			r.Patch, r.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "replace", "path": "/metadata/name", "value": "other"})
			return r
		}, revise, "makes workload.example.io/v1alpha1/Workload shop/nginx another object"},
		{"patch type", func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
			t := configv1alpha1.PatchType("MergePatch")
			return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Patch: []byte(`{}`), PatchType: &t}
		}, revise, `patchType is "MergePatch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, failures := serve(t, tc.resp)
			err := tc.call(c)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if !strings.Contains(err.Error(), `interpreter webhook "workloads.example.com" (ResourceInterpreterWebhookConfiguration "examples")`) {
				t.Fatalf("the error does not name the webhook: %v", err)
			}
			if len(*failures) != 1 || (*failures)[0].Webhook != "workloads.example.com" {
				t.Fatalf("failures: %v", *failures)
			}
		})
	}
}

func replicas(c interpreter.Customization) error { _, _, err := c.GetReplicas(workload(1)); return err }
func revise(c interpreter.Customization) error   { _, err := c.ReviseReplica(workload(1), 2); return err }

func TestTimeoutAndTLS(t *testing.T) {
	srv, c, failures := serve(t, func(*configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
		return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Replicas: ptr.To[int32](1)}
	})
	srv.Hold()
	err := replicas(c)
	srv.Release()
	if err == nil || !strings.Contains(err.Error(), "no answer within 1s (timeoutSeconds)") {
		t.Fatalf("err = %v", err)
	}
	if len(*failures) != 1 || (*failures)[0].Operation != configv1alpha1.InterpreterOperationInterpretReplica {
		t.Fatalf("failures: %v", *failures)
	}

	// Another CA's bundle: the server's certificate is not trusted.
	other, err := interpreterhook.Start(nil)
	must(t, err)
	defer other.Close()
	r := interpreterwebhook.NewRegistry(interpreterwebhook.Options{})
	must(t, r.Apply(config("examples", hook("workloads.example.com", srv.URL, other.CABundle, "*"))))
	c2, _ := r.Lookup(workloadGVK)
	err = replicas(c2)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want a certificate error", err)
	}
}
