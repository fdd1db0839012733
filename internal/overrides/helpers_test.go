package overrides

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// fromYAML builds an object from YAML, decoded the way the apiserver decodes JSON.
func fromYAML(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	m, err := decodeObject(j)
	if err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// raw is a JSON value for an overrider.
func raw(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web, tier: front}
  annotations: {owner: team-a}
spec:
  replicas: 2
  template:
    spec:
      initContainers:
      - name: init
        image: busybox:1.36
        command: [sh, -c, "true"]
      containers:
      - name: web
        image: docker.io/library/nginx:1.27
        args: [--port, "8080"]
      - name: sidecar
        image: gcr.io/proxy/envoy:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
`
