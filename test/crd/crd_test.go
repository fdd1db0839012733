package crd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/customization/builtin"
)

// readObjects reads every YAML document of the files under dir (recursively) whose API group
// is one of ours.
func readObjects(dir string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(u.Object) == 0 || !strings.Contains(u.GetAPIVersion(), "karmada.io") {
				continue
			}
			u.SetAnnotations(map[string]string{"test.flotilla.io/source": filepath.Base(path)})
			objs = append(objs, u)
		}
	})
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// normalize round-trips a value through JSON so that numbers compare alike.
func normalize(v any) any {
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out any
	Expect(json.Unmarshal(data, &out)).To(Succeed())
	return out
}

// expectSubset fails unless every field of want is in got with the same value; got may hold
// more (defaults, metadata).
func expectSubset(path string, want, got any) {
	expectSubsetNormalized(path, normalize(want), normalize(got))
}

func expectSubsetNormalized(path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		Expect(ok).To(BeTrue(), "%s: want an object, got %#v", path, got)
		for k, wv := range w {
			gv, ok := g[k]
			Expect(ok).To(BeTrue(), "%s.%s was dropped by the apiserver", path, k)
			expectSubsetNormalized(path+"."+k, wv, gv)
		}
	case []any:
		g, ok := got.([]any)
		Expect(ok).To(BeTrue(), "%s: want a list, got %#v", path, got)
		Expect(g).To(HaveLen(len(w)), "%s: list length changed", path)
		for i := range w {
			expectSubsetNormalized(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		Expect(reflect.DeepEqual(want, got)).To(BeTrue(), "%s: sent %#v, read back %#v", path, want, got)
	}
}

func createNamespace(ctx context.Context, name string) {
	err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

var _ = Describe("Valid Karmada YAML", func() {
	for _, dir := range []string{"scenarios", "karmada", "guides"} {
		It("applies and reads back unchanged: testdata/"+dir, func(ctx context.Context) {
			objs := readObjects(filepath.Join("..", "testdata", dir))
			Expect(objs).NotTo(BeEmpty())
			for _, want := range objs {
				if ns := want.GetNamespace(); ns != "" {
					createNamespace(ctx, ns)
				}
				sent := want.DeepCopy()
				Expect(k8sClient.Create(ctx, want)).To(Succeed(), "%s %s", want.GetKind(), want.GetName())
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(want.GroupVersionKind())
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed())
				expectSubset(want.GetKind()+"/"+want.GetName(), sent.Object, got.Object)
				Expect(k8sClient.Delete(ctx, got)).To(Succeed())
			}
		})
	}

	It("applies the built-in customizations: internal/customization/builtin", func(ctx context.Context) {
		rics, err := builtin.Customizations()
		Expect(err).NotTo(HaveOccurred())
		Expect(len(rics)).To(BeNumerically(">=", 30))
		for _, ric := range rics {
			Expect(k8sClient.Create(ctx, ric, client.DryRunAll)).To(Succeed(), ric.Name)
		}
	})

	It("fills Karmada's defaults", func(ctx context.Context) {
		createNamespace(ctx, "defaults")
		pp := mustObject(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: defaults, namespace: defaults}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    replicaScheduling: {replicaDivisionPreference: Weighted}
  failover:
    application:
      decisionConditions: {}
    cluster: {}
`)
		Expect(k8sClient.Create(ctx, pp)).To(Succeed())
		spec := pp.Object["spec"].(map[string]any)
		Expect(spec).To(HaveKeyWithValue("conflictResolution", "Abort"))
		Expect(spec).To(HaveKeyWithValue("preemption", "Never"))
		Expect(spec).To(HaveKeyWithValue("priority", BeNumerically("==", 0)))
		Expect(spec).To(HaveKeyWithValue("schedulerName", "default-scheduler"))
		v, _, _ := unstructured.NestedString(pp.Object, "spec", "placement", "replicaScheduling", "replicaSchedulingType")
		Expect(v).To(Equal("Divided"))
		n, _, _ := unstructured.NestedInt64(pp.Object, "spec", "failover", "application", "decisionConditions", "tolerationSeconds")
		Expect(n).To(BeNumerically("==", 300))
		v, _, _ = unstructured.NestedString(pp.Object, "spec", "failover", "application", "purgeMode")
		Expect(v).To(Equal("Gracefully"))
		v, _, _ = unstructured.NestedString(pp.Object, "spec", "failover", "cluster", "purgeMode")
		Expect(v).To(Equal("Gracefully"))
	})
})

func mustObject(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	return u
}

// invalidCase is an object the apiserver must reject, and what its message must say: the
// offending field's path and a hint of what to fix.
type invalidCase struct {
	name string
	doc  string
	want []string
}

const ppHead = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: bad, namespace: invalid}
`
const sel = `
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
`
const ropHead = `
apiVersion: rollouts.flotilla.io/v1alpha1
kind: RolloutPolicy
metadata: {name: bad, namespace: invalid}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]`
const opHead = `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: bad, namespace: invalid}
spec:
`
const clusterHead = `
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: bad}
`

var invalidCases = []invalidCase{
	{"PP without resourceSelectors", ppHead + "spec: {placement: {}}", []string{"spec.resourceSelectors", "Required value"}},
	{"PP with empty resourceSelectors", ppHead + "spec: {resourceSelectors: []}", []string{"spec.resourceSelectors", "at least 1 items"}},
	{"selector without kind", ppHead + "spec: {resourceSelectors: [{apiVersion: v1}]}", []string{"spec.resourceSelectors[0].kind", "Required value"}},
	{"clusterAffinity with clusterAffinities", ppHead + "spec:" + sel + `  placement:
    clusterAffinity: {clusterNames: [a]}
    clusterAffinities: [{affinityName: x, clusterNames: [b]}]`, []string{"spec.placement", "clusterAffinity and clusterAffinities are mutually exclusive"}},
	{"spreadByField with spreadByLabel", ppHead + "spec:" + sel + `  placement:
    spreadConstraints: [{spreadByField: cluster, spreadByLabel: site}]`, []string{"spec.placement.spreadConstraints[0]", "mutually exclusive"}},
	{"spread by region without cluster", ppHead + "spec:" + sel + `  placement:
    spreadConstraints: [{spreadByField: region, minGroups: 2}]`, []string{"spec.placement.spreadConstraints", "spreadByField: cluster"}},
	{"unknown spreadByField", ppHead + "spec:" + sel + `  placement:
    spreadConstraints: [{spreadByField: country}]`, []string{"spec.placement.spreadConstraints[0].spreadByField", "Unsupported value", "region"}},
	{"maxGroups below minGroups", ppHead + "spec:" + sel + `  placement:
    spreadConstraints: [{spreadByField: cluster, minGroups: 3, maxGroups: 2}]`, []string{"spec.placement.spreadConstraints[0]", "maxGroups must not be less than minGroups"}},
	{"fieldSelector key not provider/region/zone", ppHead + "spec:" + sel + `  placement:
    clusterAffinity: {fieldSelector: {matchExpressions: [{key: name, operator: In, values: [a]}]}}`, []string{"spec.placement.clusterAffinity.fieldSelector", "provider, region, zone"}},
	{"fieldSelector operator Exists", ppHead + "spec:" + sel + `  placement:
    clusterAffinity: {fieldSelector: {matchExpressions: [{key: zone, operator: Exists}]}}`, []string{"spec.placement.clusterAffinity.fieldSelector", "In or NotIn"}},
	{"fieldSelector in clusterAffinities", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: a, fieldSelector: {matchExpressions: [{key: cloud, operator: In, values: [x]}]}}]`, []string{"spec.placement.clusterAffinities[0].fieldSelector", "provider, region, zone"}},
	{"preemption Always with unnamed selector", ppHead + `spec:
  preemption: Always
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {a: b}}}]`, []string{"spec.preemption", "resourceSelectors[].name"}},
	{"unknown preemption", ppHead + "spec:" + sel + "  preemption: Sometimes", []string{"spec.preemption", "Unsupported value", "Always"}},
	{"unknown conflictResolution", ppHead + "spec:" + sel + "  conflictResolution: Merge", []string{"spec.conflictResolution", "Unsupported value", "Overwrite"}},
	{"unknown replicaSchedulingType", ppHead + "spec:" + sel + `  placement:
    replicaScheduling: {replicaSchedulingType: Split}`, []string{"spec.placement.replicaScheduling.replicaSchedulingType", "Unsupported value"}},
	{"unknown replicaDivisionPreference", ppHead + "spec:" + sel + `  placement:
    replicaScheduling: {replicaDivisionPreference: Even}`, []string{"spec.placement.replicaScheduling.replicaDivisionPreference", "Unsupported value"}},
	{"static weight 0", ppHead + "spec:" + sel + `  placement:
    replicaScheduling:
      weightPreference: {staticWeightList: [{targetCluster: {clusterNames: [a]}, weight: 0}]}`, []string{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", "greater than or equal to 1"}},
	{"static weight without targetCluster", ppHead + "spec:" + sel + `  placement:
    replicaScheduling:
      weightPreference: {staticWeightList: [{weight: 1}]}`, []string{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].targetCluster", "Required value"}},
	{"unknown dynamicWeight", ppHead + "spec:" + sel + `  placement:
    replicaScheduling:
      weightPreference: {dynamicWeight: Random}`, []string{"spec.placement.replicaScheduling.weightPreference.dynamicWeight", "Unsupported value", "AvailableReplicas"}},
	{"affinityName too long", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: this-affinity-name-is-longer-than-32-chars, clusterNames: [a]}]`, []string{"spec.placement.clusterAffinities[0].affinityName", "Too long"}},
	{"duplicate affinityName", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: a, clusterNames: [m1]}, {affinityName: a, clusterNames: [m2]}]`, []string{"spec.placement.clusterAffinities", "affinityName must be unique"}},
	{"overflowAffinities with Duplicated replicas", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: idc, clusterNames: [m1], overflowAffinities: [{affinityName: cloud, clusterNames: [m2]}]}]`,
		[]string{"spec.placement.clusterAffinities", "overflowAffinities: only with replicaScheduling Divided"}},
	{"overflowAffinities with static weights", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: idc, clusterNames: [m1], overflowAffinities: [{affinityName: cloud, clusterNames: [m2]}]}]
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {staticWeightList: [{targetCluster: {clusterNames: [m1]}, weight: 1}]}}`,
		[]string{"spec.placement.clusterAffinities", "overflowAffinities: only with replicaScheduling Divided"}},
	{"overflowAffinities without the group's own clusters", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: idc, overflowAffinities: [{affinityName: cloud, clusterNames: [m2]}]}]
    replicaScheduling: {replicaDivisionPreference: Aggregated}`,
		[]string{"spec.placement.clusterAffinities[0].overflowAffinities", "preferred tier and must be set"}},
	{"overflow affinityName repeated", ppHead + "spec:" + sel + `  placement:
    clusterAffinities: [{affinityName: idc, clusterNames: [m1], overflowAffinities: [{affinityName: idc, clusterNames: [m2]}]}]
    replicaScheduling: {replicaDivisionPreference: Aggregated}`,
		[]string{"spec.placement.clusterAffinities[0].overflowAffinities", "affinityName must be unique and differ"}},
	{"dispatching with dispatchingOnClusters", ppHead + "spec:" + sel + `  suspension:
    dispatching: true
    dispatchingOnClusters: {clusterNames: [a]}`, []string{"spec.suspension", "cannot be combined with dispatchingOnClusters"}},
	{"cluster failover purgeMode Never", ppHead + "spec:" + sel + `  failover:
    cluster: {purgeMode: Never}`, []string{"spec.failover.cluster.purgeMode", "Unsupported value"}},
	{"application failover without decisionConditions", ppHead + "spec:" + sel + `  failover:
    application: {purgeMode: Directly}`, []string{"spec.failover.application.decisionConditions", "Required value"}},
	{"unknown priorityClassSource", ppHead + "spec:" + sel + `  schedulePriority: {priorityClassSource: Custom, priorityClassName: x}`, []string{"spec.schedulePriority.priorityClassSource", "Unsupported value"}},
	{"CPP fieldSelector operator Gt", `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: bad}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Namespace}]
  placement:
    clusterAffinity: {fieldSelector: {matchExpressions: [{key: region, operator: Gt, values: ["1"]}]}}`, []string{"spec.placement.clusterAffinity.fieldSelector", "In or NotIn"}},
	{"overrideRules with legacy targetCluster", opHead + `  targetCluster: {clusterNames: [a]}
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {a: b}}]}}]`, []string{"spec", "overrideRules cannot be combined"}},
	{"overrideRules with legacy overriders", opHead + `  overriders: {plaintext: [{path: /a, operator: remove}]}
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {a: b}}]}}]`, []string{"spec", "overrideRules cannot be combined"}},
	{"fieldOverrider with json and yaml", opHead + `  overrideRules:
  - overriders:
      fieldOverrider: [{fieldPath: /data/a, json: [{subPath: /x, operator: remove}], yaml: [{subPath: /y, operator: remove}]}]`, []string{"spec.overrideRules[0].overriders.fieldOverrider[0]", "exactly one of json and yaml"}},
	{"fieldOverrider with neither", opHead + `  overrideRules:
  - overriders:
      fieldOverrider: [{fieldPath: /data/a}]`, []string{"spec.overrideRules[0].overriders.fieldOverrider[0]", "exactly one of json and yaml"}},
	{"image component Digest", opHead + `  overrideRules:
  - overriders:
      imageOverrider: [{component: Digest, operator: replace, value: x}]`, []string{"spec.overrideRules[0].overriders.imageOverrider[0].component", "Unsupported value", "Registry"}},
	{"commandOverrider replace", opHead + `  overrideRules:
  - overriders:
      commandOverrider: [{containerName: c, operator: replace, value: [x]}]`, []string{"spec.overrideRules[0].overriders.commandOverrider[0].operator", "Unsupported value"}},
	{"plaintext without path", opHead + `  overrideRules:
  - overriders:
      plaintext: [{operator: remove}]`, []string{"spec.overrideRules[0].overriders.plaintext[0].path", "Required value"}},
	{"rule without overriders", opHead + `  overrideRules:
  - targetCluster: {clusterNames: [a]}`, []string{"spec.overrideRules[0].overriders", "Required value"}},
	{"COP labelsOverrider without value", `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: bad}
spec:
  overrideRules:
  - overriders:
      labelsOverrider: [{operator: add}]`, []string{"spec.overrideRules[0].overriders.labelsOverrider[0].value", "Required value"}},
	{"Cluster name over 48 characters", `
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: this-cluster-name-is-much-longer-than-48-characters}
spec: {syncMode: Push}`, []string{"metadata.name", "at most 48 characters"}},
	{"Cluster without syncMode", clusterHead + "spec: {apiEndpoint: 'https://10.0.0.1:6443'}", []string{"spec.syncMode", "Required value"}},
	{"Cluster unknown syncMode", clusterHead + "spec: {syncMode: Both}", []string{"spec.syncMode", "Unsupported value", "Push"}},
	{"apiEndpoint not http(s)", clusterHead + "spec: {syncMode: Push, apiEndpoint: 'ftp://10.0.0.1'}", []string{"spec.apiEndpoint", "http or https URL"}},
	{"apiEndpoint with user info", clusterHead + "spec: {syncMode: Push, apiEndpoint: 'https://admin:secret@10.0.0.1:6443'}", []string{"spec.apiEndpoint", "no user info"}},
	{"apiEndpoint with query", clusterHead + "spec: {syncMode: Push, apiEndpoint: 'https://10.0.0.1:6443/?token=x'}", []string{"spec.apiEndpoint", "no user info, query or fragment"}},
	{"apiEndpoint with fragment", clusterHead + "spec: {syncMode: Push, apiEndpoint: 'https://10.0.0.1:6443#x'}", []string{"spec.apiEndpoint", "no user info, query or fragment"}},
	{"apiEndpoint without host", clusterHead + "spec: {syncMode: Push, apiEndpoint: 'https://'}", []string{"spec.apiEndpoint", "with a host"}},
	{"resource model without ranges", clusterHead + "spec: {syncMode: Push, resourceModels: [{grade: 0}]}", []string{"spec.resourceModels[0].ranges", "Required value"}},
	{"ResourceBinding without resource", `
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: bad, namespace: invalid}
spec: {replicas: 1}`, []string{"spec.resource", "Required value"}},
	{"ResourceBinding suspension conflict", `
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: bad, namespace: invalid}
spec:
  resource: {apiVersion: v1, kind: ConfigMap, name: x}
  suspension: {dispatching: true, dispatchingOnClusters: {clusterNames: [a]}}`, []string{"spec.suspension", "cannot be combined with dispatchingOnClusters"}},
	{"ResourceBinding component name too long", `
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: bad, namespace: invalid}
spec:
  resource: {apiVersion: v1, kind: ConfigMap, name: x}
  components: [{name: a-component-name-longer-than-32-characters, replicas: 1}]`, []string{"spec.components[0].name", "Too long"}},
	{"ResourceBinding unknown conflictResolution", `
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: bad, namespace: invalid}
spec:
  resource: {apiVersion: v1, kind: ConfigMap, name: x}
  conflictResolution: Replace`, []string{"spec.conflictResolution", "Unsupported value", "Overwrite"}},
	{"WorkloadRebalancer without workloads", `
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: bad}
spec: {workloads: []}`, []string{"spec.workloads", "at least 1"}},
	{"WorkloadRebalancer workload without a name", `
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: bad}
spec: {workloads: [{apiVersion: apps/v1, kind: Deployment}]}`, []string{"spec.workloads[0].name", "Required value"}},
	{"WorkloadRebalancer with a malformed apiVersion", `
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: bad}
spec: {workloads: [{apiVersion: a/b/c, kind: Deployment, name: x}]}`, []string{"spec.workloads[0].apiVersion", "'version' or 'group/version'"}},
	{"WorkloadRebalancer with a negative TTL", `
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: bad}
spec: {workloads: [{apiVersion: v1, kind: ConfigMap, name: x}], ttlSecondsAfterFinished: -1}`, []string{"spec.ttlSecondsAfterFinished", "greater than or equal to 0"}},
	{"ResourceInterpreterCustomization without any script", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: bad}
spec:
  target: {apiVersion: example.io/v1, kind: Cache}
  customizations: {}`, []string{"spec.customizations", "at least one script"}},
	{"FederatedResourceQuota with a cluster assigned twice", `
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: bad, namespace: invalid}
spec:
  overall: {cpu: "10"}
  staticAssignments: [{clusterName: m1, hard: {cpu: "1"}}, {clusterName: m1, hard: {cpu: "2"}}]`, []string{"spec.staticAssignments", "each clusterName may appear only once"}},
	{"FederatedResourceQuota without overall", `
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: bad, namespace: invalid}
spec:
  staticAssignments: [{clusterName: m1, hard: {cpu: "1"}}]`, []string{"spec.overall", "Required value"}},
	{"FederatedResourceQuota assignment without clusterName", `
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: bad, namespace: invalid}
spec:
  overall: {cpu: "10"}
  staticAssignments: [{hard: {cpu: "1"}}]`, []string{"spec.staticAssignments[0].clusterName", "Required value"}},
	{"ResourceInterpreterWebhookConfiguration without webhooks", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks: []`, []string{"webhooks", "at least 1"}},
	{"ResourceInterpreterWebhookConfiguration with an http URL", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {url: "http://w.example.com/i"}
  interpreterContextVersions: [v1alpha1]`, []string{"webhooks[0]", "https:// URL"}},
	{"ResourceInterpreterWebhookConfiguration without url or service", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {}
  interpreterContextVersions: [v1alpha1]`, []string{"webhooks[0]", "url or service"}},
	{"ResourceInterpreterWebhookConfiguration with an unknown operation", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {url: "https://w.example.com/i"}
  rules: [{operations: [Explore], apiGroups: [""], apiVersions: [v1], kinds: [Pod]}]
  interpreterContextVersions: [v1alpha1]`, []string{"webhooks[0].rules[0].operations[0]", "Unsupported value"}},
	{"ResourceInterpreterWebhookConfiguration with a timeout over 30s", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {url: "https://w.example.com/i"}
  timeoutSeconds: 31
  interpreterContextVersions: [v1alpha1]`, []string{"webhooks[0].timeoutSeconds", "less than or equal to 30"}},
	{"ResourceInterpreterWebhookConfiguration without v1alpha1", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {url: "https://w.example.com/i"}
  interpreterContextVersions: [v1]`, []string{"webhooks[0].interpreterContextVersions", "must include v1alpha1"}},
	{"ResourceInterpreterWebhookConfiguration with '*' beside a kind", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: w.example.com
  clientConfig: {url: "https://w.example.com/i"}
  rules: [{operations: ["*"], apiGroups: [""], apiVersions: [v1], kinds: ["*", Pod]}]
  interpreterContextVersions: [v1alpha1]`, []string{"webhooks[0].rules[0]", "kinds: '*' must be alone"}},
	{"CronFederatedHPA rule without a target", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules: [{name: up, schedule: "0 8 * * *"}]`, []string{"spec.rules[0]", "must set targetReplicas"}},
	{"CronFederatedHPA with two rules of one name", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules: [{name: up, schedule: "0 8 * * *", targetReplicas: 3}, {name: up, schedule: "0 9 * * *", targetReplicas: 4}]`, []string{"spec.rules[1]", "Duplicate value"}},
	{"CronFederatedHPA with a history limit over 32", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules: [{name: up, schedule: "0 8 * * *", targetReplicas: 3, successfulHistoryLimit: 33}]`, []string{"spec.rules[0].successfulHistoryLimit", "less than or equal to 32"}},
	{"CronFederatedHPA with negative replicas", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules: [{name: up, schedule: "0 8 * * *", targetReplicas: -1}]`, []string{"spec.rules[0].targetReplicas", "greater than or equal to 0"}},
	{"FederatedHPA with minReplicas over maxReplicas", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 5
  maxReplicas: 2`, []string{"spec.minReplicas", "less than or equal to spec.maxReplicas"}},
	{"FederatedHPA with maxReplicas 0", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 0`, []string{"spec.maxReplicas", "greater than or equal to 1"}},
	{"FederatedHPA without a target", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  maxReplicas: 3`, []string{"spec.scaleTargetRef", "Required value"}},
	{"FederatedHPA Resource metric without resource", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics: [{type: Resource}]`, []string{"spec.metrics[0]", "needs metrics[].resource"}},
	{"FederatedHPA Utilization target without averageUtilization", `
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata: {name: bad, namespace: invalid}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization}}}]`, []string{"spec.metrics[0]", "needs averageUtilization"}},
	{"ResourceInterpreterCustomization with an empty script", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: bad}
spec:
  target: {apiVersion: example.io/v1, kind: Cache}
  customizations: {healthInterpretation: {luaScript: ""}}`, []string{"spec.customizations.healthInterpretation.luaScript"}},
	{"ResourceInterpreterCustomization with a malformed apiVersion", `
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: bad}
spec:
  target: {apiVersion: a/b/c, kind: Cache}
  customizations: {healthInterpretation: {luaScript: "function InterpretHealth(o) return true end"}}`, []string{"spec.target.apiVersion", "'group/version'"}},
	{"RolloutPolicy with a progress deadline shorter than the soak", ropHead + `
  stages: [{name: canary, soak: 10m, healthGate: {progressDeadline: 5m}}]`, []string{"spec.stages[0]", "progressDeadline must not be shorter than soak"}},
	{"RolloutPolicy stage picking clusters two ways", ropHead + `
  stages: [{name: canary, clusters: {names: [m1], percent: 10}}]`, []string{"spec.stages[0].clusters", "exactly one of names, labelSelector, percent"}},
	{"RolloutPolicy with two stages of one name", ropHead + `
  stages: [{name: a}, {name: a}]`, []string{"spec", "names must be unique"}},
	{"RolloutPolicy with maxUnavailable 0", ropHead + `
  maxUnavailable: 0
  stages: [{name: a}]`, []string{"spec.maxUnavailable", "at least 1"}},
	{"RolloutPolicy with a bad maxConcurrency percent", ropHead + `
  stages: [{name: a, maxConcurrency: "150%"}]`, []string{"spec.stages[0].maxConcurrency"}},
	{"ClusterRolloutPolicy with an unknown onFailure", `
apiVersion: rollouts.flotilla.io/v1alpha1
kind: ClusterRolloutPolicy
metadata: {name: bad}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  onFailure: Retry
  stages: [{name: a}]`, []string{"spec.onFailure", "Hold", "Rollback"}},
}

var _ = Describe("Invalid objects", func() {
	BeforeEach(func(ctx context.Context) { createNamespace(ctx, "invalid") })

	It("has at least 25 cases", func() { Expect(len(invalidCases)).To(BeNumerically(">=", 25)) })

	for _, tc := range invalidCases {
		It("rejects "+tc.name, func(ctx context.Context) {
			obj := mustObject(tc.doc)
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(HaveOccurred(), "the apiserver accepted an invalid %s", obj.GetKind())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			for _, s := range tc.want {
				Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
})

// printerCase is the columns `kubectl get` prints for a kind; wide columns only show with -o wide.
type printerCase struct {
	group, version, resource string
	namespaced               bool
	columns, wide            []string
}

var _ = Describe("kubectl get columns", func() {
	cases := []printerCase{
		{"cluster.karmada.io", "v1alpha1", "clusters", false, []string{"Name", "VERSION", "MODE", "READY", "AGE"}, []string{"APIENDPOINT"}},
		{"policy.karmada.io", "v1alpha1", "propagationpolicies", true, []string{"Name", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"}, nil},
		{"policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", false, []string{"Name", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"}, nil},
		{"policy.karmada.io", "v1alpha1", "overridepolicies", true, []string{"Name", "Age"}, nil},
		{"policy.karmada.io", "v1alpha1", "clusteroverridepolicies", false, []string{"Name", "Age"}, nil},
		{"policy.karmada.io", "v1alpha1", "clustertaintpolicies", false, []string{"Name", "FIRST-TAINT", "AGE"}, nil},
		{"policy.karmada.io", "v1alpha1", "federatedresourcequotas", true, []string{"Name", "OVERALL", "OVERALL_USED", "AGE"}, []string{"READY"}},
		{"networking.karmada.io", "v1alpha1", "multiclusterservices", true, []string{"Name", "TYPES", "APPLIED", "AGE"}, nil},
		{"work.karmada.io", "v1alpha2", "resourcebindings", true, []string{"Name", "READY", "SCHEDULED", "FULLYAPPLIED", "AGE"}, []string{"CLUSTERS"}},
		{"work.karmada.io", "v1alpha2", "clusterresourcebindings", false, []string{"Name", "READY", "SCHEDULED", "FULLYAPPLIED", "AGE"}, []string{"CLUSTERS"}},
		{"work.karmada.io", "v1alpha1", "works", true, []string{"Name", "WORKLOAD-KIND", "APPLIED", "AGE"}, nil},
		{"config.karmada.io", "v1alpha1", "resourceinterpretercustomizations", false,
			[]string{"Name", "Target-API-Version", "Target-Kind", "Loaded", "Age"}, []string{"Scripts-Healthy"}},
		{"apps.karmada.io", "v1alpha1", "workloadrebalancers", false, []string{"Name", "Finished", "Age"}, nil},
		{"autoscaling.karmada.io", "v1alpha1", "cronfederatedhpas", true, []string{"Name", "REFERENCE-KIND", "REFERENCE-NAME", "AGE"}, []string{"FLEET-REPLICAS", "READY"}},
		{"autoscaling.karmada.io", "v1alpha1", "federatedhpas", true, []string{"Name", "REFERENCE-KIND", "REFERENCE-NAME", "MINPODS", "MAXPODS", "REPLICAS", "AGE"}, []string{"DESIRED", "ACTIVE"}},
		{"config.karmada.io", "v1alpha1", "resourceinterpreterwebhookconfigurations", false,
			[]string{"Name", "Webhooks", "Loaded", "Age"}, []string{"Webhooks-Healthy"}},
	}
	for _, pc := range cases {
		It("prints the intended columns for "+pc.resource, func(ctx context.Context) {
			// kubectl get asks the apiserver for a Table; ask the same way.
			cfg := rest.CopyConfig(hostCfg)
			cfg.GroupVersion = nil
			cfg.NegotiatedSerializer = nil
			rc, err := rest.UnversionedRESTClientFor(withCodec(cfg))
			Expect(err).NotTo(HaveOccurred())
			path := "/apis/" + pc.group + "/" + pc.version + "/" + pc.resource
			body, err := rc.Get().AbsPath(path).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
				DoRaw(ctx)
			Expect(err).NotTo(HaveOccurred())
			table := &metav1.Table{}
			Expect(yaml.Unmarshal(body, table)).To(Succeed())
			var normal, wide []string
			for _, c := range table.ColumnDefinitions {
				if c.Priority == 0 {
					normal = append(normal, c.Name)
				} else {
					wide = append(wide, c.Name)
				}
			}
			Expect(normal).To(Equal(pc.columns))
			Expect(wide).To(Equal(pc.wide))
		})
	}

	It("lists every kind under the karmada-io category and its short names", func(ctx context.Context) {
		dc := discoveryFor(hostCfg)
		lists, err := dc.ServerPreferredResources()
		Expect(err).NotTo(HaveOccurred())
		short := map[string][]string{}
		var inCategory []string
		for _, l := range lists {
			for _, r := range l.APIResources {
				if strings.Contains(l.GroupVersion, "karmada.io") {
					short[r.Name] = r.ShortNames
					for _, c := range r.Categories {
						if c == "karmada-io" {
							inCategory = append(inCategory, r.Name)
						}
					}
				}
			}
		}
		sort.Strings(inCategory)
		Expect(inCategory).To(Equal([]string{"clusteroverridepolicies", "clusterpropagationpolicies", "clusterresourcebindings", "clusters", "clustertaintpolicies", "cronfederatedhpas", "federatedhpas", "federatedresourcequotas", "multiclusterservices", "overridepolicies", "propagationpolicies", "resourcebindings", "resourceinterpretercustomizations", "resourceinterpreterwebhookconfigurations", "workloadrebalancers", "works"}))
		Expect(short).To(HaveKeyWithValue("resourceinterpretercustomizations", []string{"ric"}))
		Expect(short).To(HaveKeyWithValue("multiclusterservices", []string{"mcs"}))
		Expect(short).To(HaveKeyWithValue("cronfederatedhpas", []string{"cronfhpa"}))
		Expect(short).To(HaveKeyWithValue("federatedhpas", []string{"fhpa"}))
		Expect(short).To(HaveKeyWithValue("workloadrebalancers", []string{"wr"}))
		Expect(short).To(HaveKeyWithValue("propagationpolicies", []string{"pp"}))
		Expect(short).To(HaveKeyWithValue("clusterpropagationpolicies", []string{"cpp"}))
		Expect(short).To(HaveKeyWithValue("overridepolicies", []string{"op"}))
		Expect(short).To(HaveKeyWithValue("clusteroverridepolicies", []string{"cop"}))
		Expect(short).To(HaveKeyWithValue("resourcebindings", []string{"rb"}))
		Expect(short).To(HaveKeyWithValue("clusterresourcebindings", []string{"crb"}))
		Expect(short).To(HaveKeyWithValue("works", []string{"wk"}))
	})
})
