package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// TestWorkloadCommandsExitCodes runs describe, events and logs as main does against a real
// host apiserver whose only member never answers: the messages and the exit verdicts.
func TestWorkloadCommandsExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host, err := localcluster.Start(ctx, localcluster.Options{Name: "plugin-host"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Stop() })
	if _, err := host.InstallCRDs(ctx, filepath.Join("..", "..", "config", "crd", "bases")); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.SystemNamespace}},
		fleettest.Deployment("shop", "web", 2),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: "gone"},
			Data: map[string][]byte{wellknown.SecretKeyToken: []byte("t")}},
		&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", InsecureSkipTLSVerification: true,
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: wellknown.SystemNamespace, Name: "gone"}}},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	exec := func(args ...string) (string, string, error) {
		root := newRootCommand()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append(args, "--kubeconfig", host.KubeconfigPath))
		err := root.ExecuteContext(ctx)
		return out.String(), errOut.String(), err
	}

	// gone is not Ready: no member is read by default.
	_, _, err = exec("events", "deploy/web", "-n", "shop")
	if err == nil || err.Error() != "no Ready member clusters: name them with --clusters" {
		t.Errorf("events without Ready members: %v", err)
	}
	_, _, err = exec("logs", "deploy/nope", "-n", "shop")
	if err == nil || err.Error() != `deployments.apps "nope" not found in the host (namespace shop)` {
		t.Errorf("logs of a missing template: %v", err)
	}

	c := &clusterv1alpha1.Cluster{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "gone"}, c); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Test"})
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	out, _, err := exec("events", "deploy/web", "-n", "shop")
	if err == nil || err.Error() != "all 1 member clusters failed" || !strings.Contains(out, "gone      error: ") ||
		!strings.Contains(out, "connection refused") {
		t.Errorf("events with the only member refusing: %v\n%s", err, out)
	}
	out, _, err = exec("describe", "deploy", "web", "-n", "shop", "--member-timeout", "2s")
	if err == nil || err.Error() != "all 1 member clusters failed" ||
		!strings.HasPrefix(out, "Deployment shop/web: in 0 of 1 member clusters (1 failed)\n\nCluster: gone\n  error: ") {
		t.Errorf("describe with the only member refusing: %v\n%s", err, out)
	}
	out, errOut, err := exec("logs", "deploy/web", "-n", "shop", "--clusters", "gone,ghost")
	if err == nil || err.Error() != "all 2 member clusters failed" || out != "" ||
		!strings.Contains(errOut, "error: cluster ghost: no Cluster named \"ghost\" in the host\n") ||
		!strings.Contains(errOut, "error: cluster gone: ") {
		t.Errorf("logs with every member failing: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	out, _, err = exec("describe", "cluster", "gone")
	if err != nil || !strings.Contains(out, "API Endpoint:") {
		t.Errorf("describe cluster still works: %v\n%s", err, out)
	}
}
