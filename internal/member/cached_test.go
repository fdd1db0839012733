package member

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Cached reads the cache, except for a trimmed kind (the built-in workloads) that whole
// names: that one comes from the member whole.
func TestCachedReadsWholeKindsLive(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "x"}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&appsv1.Deployment{ObjectMeta: meta}, &appsv1.StatefulSet{ObjectMeta: meta}, &corev1.Service{ObjectMeta: meta}).Build()
	liveMeta := meta
	liveMeta.Labels = map[string]string{"from": "member"}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&appsv1.Deployment{ObjectMeta: liveMeta}, &appsv1.StatefulSet{ObjectMeta: liveMeta}, &corev1.Service{ObjectMeta: liveMeta}).Build()
	customized := map[schema.GroupKind]bool{{Group: "apps", Kind: "Deployment"}: true, {Kind: "Service"}: true}
	r := cachedReader{cache: cached, live: live, whole: func(gvk schema.GroupVersionKind) bool { return customized[gvk.GroupKind()] }}
	ctx := context.Background()
	from := func(obj client.Object) string {
		if obj.GetLabels()["from"] == "member" {
			return "member"
		}
		return "cache"
	}
	for _, tc := range []struct {
		obj  client.Object
		want string
	}{
		{&appsv1.Deployment{}, "member"}, // trimmed and customized
		{&appsv1.StatefulSet{}, "cache"}, // trimmed, not customized
		{&corev1.Service{}, "cache"},     // customized, but the cache holds it whole
		{deploymentU(), "member"},        // unstructured alike
	} {
		if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, tc.obj); err != nil {
			t.Fatal(err)
		}
		if got := from(tc.obj); got != tc.want {
			t.Errorf("%T: read from the %s, want the %s", tc.obj, got, tc.want)
		}
	}
	list := &appsv1.DeploymentList{}
	if err := r.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || from(&list.Items[0]) != "member" {
		t.Errorf("list of Deployments: %v, want the member's", list.Items)
	}
	sts := &appsv1.StatefulSetList{}
	if err := r.List(ctx, sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Items) != 1 || from(&sts.Items[0]) != "cache" {
		t.Errorf("list of StatefulSets: %v, want the cache's", sts.Items)
	}
	// Without whole, everything comes from the cache.
	r.whole = nil
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, d); err != nil {
		t.Fatal(err)
	}
	if from(d) != "cache" {
		t.Error("without whole, a Deployment was read from the member")
	}
}

func deploymentU() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	return u
}

// waitingReader is a cache whose informer never syncs: a read waits for its context.
type waitingReader struct{ client.Reader }

func (waitingReader) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// A read through a connection that was replaced or dropped meanwhile ends with
// ErrNotConnected, instead of waiting for the cache forever (the cache stopped with the
// connection, and an informer started after that never syncs).
func TestCachedEndsWithTheConnection(t *testing.T) {
	conn, closeConn := context.WithCancel(context.Background())
	r := cachedReader{cache: waitingReader{}, conn: conn, name: "member1"}
	errs := make(chan error, 1)
	go func() {
		errs <- r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.ConfigMap{})
	}()
	time.Sleep(50 * time.Millisecond)
	closeConn()
	select {
	case err := <-errs:
		if !errors.Is(err, ErrNotConnected) {
			t.Fatalf("read ended with %v, want ErrNotConnected", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits 10 s after its connection closed")
	}
	// A read after the connection closed fails at once.
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.ConfigMap{}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("read after close: %v, want ErrNotConnected", err)
	}
}

// NoWait's reads fail at once with ErrNotSynced while the kind's informer has not synced,
// and read the cache once it has; reads the member answers itself never wait on one.
func TestNoWaitFailsWhileTheKindSyncs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "x"}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Service{ObjectMeta: meta}, &appsv1.Deployment{ObjectMeta: meta}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&appsv1.Deployment{ObjectMeta: meta}).Build()
	infs := &syncInformers{}
	r := cachedReader{cache: cached, live: live, name: "member1", informers: infs,
		whole: func(gvk schema.GroupVersionKind) bool { return gvk.Kind == "Deployment" }}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "x"}
	svc := &unstructured.Unstructured{}
	svc.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Service"})
	if err := r.Get(ctx, key, svc); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Get of an unsynced kind: %v, want ErrNotSynced", err)
	}
	list := &corev1.ServiceList{}
	if err := r.List(ctx, list); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("List of an unsynced kind: %v, want ErrNotSynced", err)
	}
	if got := infs.asked; len(got) != 2 || got[0] != "/v1, Kind=Service" || got[1] != "/v1, Kind=Service" {
		t.Errorf("informers asked for %v, want the Service's twice", got)
	}
	// A whole kind is read from the member: no informer is asked.
	if err := r.Get(ctx, key, &appsv1.Deployment{}); err != nil {
		t.Fatalf("Get of a kind read live: %v", err)
	}
	infs.synced = true
	if err := r.Get(ctx, key, svc); err != nil {
		t.Fatalf("Get of a synced kind: %v", err)
	}
	// Cached's reader (no informers) never asks.
	r.informers = nil
	infs.synced = false
	if err := r.Get(ctx, key, svc); err != nil {
		t.Fatalf("Cached's Get: %v", err)
	}
}

// syncInformers answers GetInformer with an informer whose HasSynced is synced.
type syncInformers struct {
	cache.Informers
	synced bool
	asked  []string
}

func (s *syncInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	s.asked = append(s.asked, obj.GetObjectKind().GroupVersionKind().String())
	return syncInformer{synced: s.synced}, nil
}

func (s *syncInformers) GetInformerForKind(_ context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	s.asked = append(s.asked, gvk.String())
	return syncInformer{synced: s.synced}, nil
}

type syncInformer struct {
	cache.Informer
	synced bool
}

func (s syncInformer) HasSynced() bool { return s.synced }
