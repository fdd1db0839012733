package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

func TestGetDependencies(t *testing.T) {
	podSpec := `{
      serviceAccountName: runner,
      imagePullSecrets: [{name: registry}],
      initContainers: [{name: init, envFrom: [{configMapRef: {name: init-env}}]}],
      containers: [{name: app,
        env: [
          {name: A, valueFrom: {configMapKeyRef: {name: app-config, key: a}}},
          {name: B, valueFrom: {secretKeyRef: {name: app-secret, key: b}}},
          {name: C, valueFrom: {fieldRef: {fieldPath: metadata.name}}},
          {name: D, value: plain}],
        envFrom: [{secretRef: {name: env-secret}}, {configMapRef: {name: app-config}}]}],
      volumes: [
        {name: v1, configMap: {name: files}},
        {name: v2, secret: {secretName: certs}},
        {name: v3, persistentVolumeClaim: {claimName: data}},
        {name: v4, projected: {sources: [{configMap: {name: projected-cm}}, {secret: {name: projected-secret}}, {serviceAccountToken: {path: t}}]}},
        {name: v5, configMap: {name: kube-root-ca.crt}},
        {name: v6, emptyDir: {}}]}`
	want := func(ns string) []configv1alpha1.DependentObjectReference {
		out := []configv1alpha1.DependentObjectReference{}
		for _, d := range [][2]string{
			{"ConfigMap", "app-config"}, {"ConfigMap", "files"}, {"ConfigMap", "init-env"}, {"ConfigMap", "projected-cm"},
			{"PersistentVolumeClaim", "data"},
			{"Secret", "app-secret"}, {"Secret", "certs"}, {"Secret", "env-secret"}, {"Secret", "projected-secret"}, {"Secret", "registry"},
			{"ServiceAccount", "runner"},
		} {
			out = append(out, configv1alpha1.DependentObjectReference{APIVersion: "v1", Kind: d[0], Namespace: ns, Name: d[1]})
		}
		return out
	}
	tests := []struct {
		name string
		obj  string
		want []configv1alpha1.DependentObjectReference
	}{
		{"Deployment", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {template: {spec: " + podSpec + "}}}", want("ns")},
		{"CronJob", "{apiVersion: batch/v1, kind: CronJob, metadata: {name: c, namespace: ns}, spec: {jobTemplate: {spec: {template: {spec: " + podSpec + "}}}}}", want("ns")},
		{"Pod", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: other}, spec: " + podSpec + "}", want("other")},
		{"default ServiceAccount is everywhere", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, namespace: ns}, spec: {template: {spec: {serviceAccountName: default, containers: [{name: c}]}}, volumeClaimTemplates: [{metadata: {name: data}}]}}`, []configv1alpha1.DependentObjectReference{}},
		{"deprecated serviceAccount", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: s, namespace: ns}, spec: {template: {spec: {serviceAccount: old, containers: [{name: c}]}}}}`,
			[]configv1alpha1.DependentObjectReference{{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "ns", Name: "old"}}},
		{"no pod template", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {}}`, nil},
		{"ConfigMap has none", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}`, nil},
		{"custom resource has none", `{apiVersion: example.com/v1, kind: App, metadata: {name: a, namespace: ns}, spec: {template: {spec: {serviceAccountName: x}}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpreter{}.GetDependencies(fromYAML(t, tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetDependenciesErrors(t *testing.T) {
	for _, obj := range []string{
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {volumes: "x"}}}}`,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{name: c, env: [{name: e, valueFrom: 3}]}]}}}}`,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: 7}}`,
	} {
		if _, err := (Interpreter{}).GetDependencies(fromYAML(t, obj)); err == nil {
			t.Errorf("%s: no error", obj)
		}
	}
}
