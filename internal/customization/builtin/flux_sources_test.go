package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fluxStatus is the status of a reconciled source: Ready for generation 2, an artifact.
const fluxStatus = `
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: "stored artifact for revision 'main@sha1:1a2b3c'", observedGeneration: 2, lastTransitionTime: "2026-03-03T08:00:00Z"}
  - {type: ArtifactInStorage, status: "True", reason: Succeeded, message: stored, observedGeneration: 2, lastTransitionTime: "2026-03-03T08:00:00Z"}
  artifact:
    path: gitrepository/flux-system/fleet/1a2b3c.tar.gz
    url: http://source-controller.flux-system.svc.cluster.local./gitrepository/flux-system/fleet/1a2b3c.tar.gz
    revision: main@sha1:1a2b3c
    digest: sha256:9f8e
    lastUpdateTime: "2026-03-03T08:00:00Z"
    size: 48213
`

func TestBuiltinFluxSources(t *testing.T) {
	for _, src := range []struct {
		name string
		yaml string
		deps []string
	}{
		{"GitRepository", `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system, generation: 2}
spec:
  interval: 1m
  url: ssh://git@github.com/example/fleet
  ref: {branch: main}
  secretRef: {name: fleet-deploy-key}
  proxySecretRef: {name: corp-proxy}
  verify: {mode: HEAD, secretRef: {name: pgp-keys}}
  include:
  - repository: {name: shared-config}
    fromPath: deploy
    toPath: shared
`, []string{"v1 Secret flux-system fleet-deploy-key", "v1 Secret flux-system corp-proxy", "v1 Secret flux-system pgp-keys",
			"source.toolkit.fluxcd.io/v1 GitRepository flux-system shared-config"}},
		{"HelmRepository", `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: bitnami, namespace: flux-system, generation: 2}
spec:
  interval: 1h
  url: https://charts.example.com
  secretRef: {name: charts-auth}
  certSecretRef: {name: charts-ca}
`, []string{"v1 Secret flux-system charts-auth", "v1 Secret flux-system charts-ca"}},
		{"HelmChart", `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: apps-podinfo, namespace: flux-system, generation: 2}
spec:
  interval: 10m
  chart: podinfo
  version: ">=6.0.0"
  sourceRef: {kind: HelmRepository, name: podinfo}
  verify: {provider: cosign, secretRef: {name: cosign-pub}}
`, []string{"source.toolkit.fluxcd.io/v1 HelmRepository flux-system podinfo", "v1 Secret flux-system cosign-pub"}},
		{"OCIRepository", `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata: {name: manifests, namespace: flux-system, generation: 2}
spec:
  interval: 5m
  url: oci://ghcr.io/example/manifests
  ref: {tag: latest}
  secretRef: {name: ghcr-auth}
  serviceAccountName: oci-puller
  verify: {provider: cosign, secretRef: {name: cosign-pub}}
`, []string{"v1 Secret flux-system ghcr-auth", "v1 Secret flux-system cosign-pub", "v1 ServiceAccount flux-system oci-puller"}},
		{"Bucket", `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: Bucket
metadata: {name: artifacts, namespace: flux-system, generation: 2}
spec:
  interval: 5m
  provider: generic
  bucketName: fleet-artifacts
  endpoint: minio.example.com
  secretRef: {name: minio-creds}
  sts: {provider: ldap, endpoint: https://sts.example.com, secretRef: {name: ldap-creds}}
`, []string{"v1 Secret flux-system minio-creds", "v1 Secret flux-system ldap-creds"}},
	} {
		t.Run(src.name, func(t *testing.T) {
			obj := object(t, src.yaml+fluxStatus)
			c := builtinFor(t, obj)
			ops(t, c, opReflect, opAgg, opHealth, opDeps)
			checkHealth(t, c, obj, []healthCase{
				{"ready", nil, true},
				{"a newer spec not seen", func(u *unstructured.Unstructured) { set(u, "metadata.generation", int64(3)) }, false},
				{"not ready", func(u *unstructured.Unstructured) {
					condition(u.Object["status"].(map[string]any), "Ready")["status"] = "False"
				}, false},
				{"no conditions", func(u *unstructured.Unstructured) { set(u, "status.conditions", nil) }, false},
				{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
			})
			r := reflected(t, c, obj)
			if !cmp.Equal(r["artifact"], map[string]any{"revision": "main@sha1:1a2b3c", "digest": "sha256:9f8e", "lastUpdateTime": "2026-03-03T08:00:00Z", "size": float64(48213)}) {
				t.Errorf("reflected artifact %v", r["artifact"])
			}

			status, err := c.AggregateStatus(obj, items(t, c, members{"eu": obj, "us": obj}))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"observedGeneration": int64(2), "conditions": []any{map[string]any{"type": "Ready", "status": "True",
				"reason": "ReadyInAllClusters", "message": "ready in all 2 clusters", "lastTransitionTime": "2026-03-03T08:00:00Z", "observedGeneration": int64(2)}}}
			if diff := cmp.Diff(want, status); diff != "" {
				t.Errorf("AggregateStatus (-want +got):\n%s", diff)
			}
			broken := obj.DeepCopy()
			ready := condition(broken.Object["status"].(map[string]any), "Ready")
			ready["status"], ready["message"], ready["lastTransitionTime"] = "False", "authentication required", "2026-03-03T09:00:00Z"
			status, _ = c.AggregateStatus(obj, items(t, c, members{"eu": obj, "us": broken}))
			if r := condition(status, "Ready"); r["status"] != "False" || r["message"] != "1 of 2 clusters not ready: us: authentication required" || r["lastTransitionTime"] != "2026-03-03T09:00:00Z" {
				t.Errorf("AggregateStatus, one not ready = %v", status)
			}

			got, err := c.GetDependencies(obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(deps(src.deps...), got); diff != "" {
				t.Errorf("GetDependencies (-want +got):\n%s", diff)
			}
		})
	}

	// An OCI HelmRepository is static: healthy without conditions.
	oci := object(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: ghcr, namespace: flux-system, generation: 1}
spec: {type: oci, url: oci://ghcr.io/example/charts, interval: 1h}
`)
	if h, err := builtinFor(t, oci).InterpretHealth(oci); err != nil || !h {
		t.Errorf("InterpretHealth(OCI HelmRepository) = %v, %v; want healthy", h, err)
	}
}
