package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

const (
	// KwokNodeAnnotation marks the Nodes kwok manages; kwok is started with
	// --manage-nodes-with-annotation-selector=KwokNodeAnnotation=fake.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// ResourceGPU is the extended resource of GPU nodes.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

	defaultNodeCount = 2

	// kubeControllerManagerControllers are kube-controller-manager's controllers minus
	// those that need a cloud, real kubelets or volumes. nodelifecycle stays on: it
	// removes the not-ready taint admission puts on new Nodes.
	kubeControllerManagerControllers = "*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route," +
		"-persistentvolume-binder,-attachdetach,-persistentvolume-expander"
)

// ControllerManagerControllersWithVolumeBinder is kube-controller-manager's --controllers value
// of a local cluster with the PersistentVolume binder on as well: it binds and asks
// provisioners for volumes of PersistentVolumeClaims (nothing provisions them here).
const ControllerManagerControllersWithVolumeBinder = "*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route," +
	"-attachdetach,-persistentvolume-expander"

// DefaultNodeCapacity returns the capacity of a default fake Node: 8 CPUs, 32Gi of memory,
// 110 Pods.
func DefaultNodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// defaultNodes fills in names and capacities, and validates the names.
func defaultNodes(cluster string, specs []NodeSpec) ([]NodeSpec, error) {
	if len(specs) == 0 {
		specs = make([]NodeSpec, defaultNodeCount)
	}
	out := make([]NodeSpec, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		if s.Name == "" {
			s.Name = cluster + "-node-" + strconv.Itoa(i+1)
		}
		if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
			return nil, fmt.Errorf("invalid node name %q: %s", s.Name, strings.Join(errs, "; "))
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("duplicate node name %q", s.Name)
		}
		seen[s.Name] = true
		if len(s.Capacity) == 0 {
			s.Capacity = DefaultNodeCapacity()
		} else {
			s.Capacity = s.Capacity.DeepCopy()
		}
		s.Labels = maps.Clone(s.Labels)
		out[i] = s
	}
	return out, nil
}

// startWorkloadPlane runs kube-controller-manager, kube-scheduler and kwok, registers the
// fake Nodes and waits until Pods can run on them.
func (c *Cluster) startWorkloadPlane(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(n), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
	}

	var procs []*process
	for _, comp := range []component{c.controllerManagerComponent(), c.schedulerComponent(), c.kwokComponent()} {
		if err := c.run(ctx, comp, failOnConflict); err != nil {
			return err
		}
		c.mu.Lock()
		procs = append(procs, c.procs[comp.name])
		c.mu.Unlock()
	}
	return waitReady(ctx, procs, func(ctx context.Context) error { return c.workloadPlaneReady(ctx, cs) })
}

// startControllerManager runs kube-controller-manager alone and waits until its
// service-account controller has created the default ServiceAccount.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	comp := c.controllerManagerComponent()
	comp.ready = func(ctx context.Context) error { return defaultServiceAccountExists(ctx, cs) }
	return c.run(ctx, comp, failOnConflict)
}

func defaultServiceAccountExists(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("default ServiceAccount: %w", err)
	}
	return nil
}

// workloadPlaneReady reports whether every fake Node is Ready without the not-ready
// taint and the default ServiceAccount exists, so that a Pod created now gets scheduled.
func (c *Cluster) workloadPlaneReady(ctx context.Context, cs kubernetes.Interface) error {
	var errs []error
	for _, n := range c.nodes {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(node) {
			errs = append(errs, fmt.Errorf("node %s is not Ready", n.Name))
			continue
		}
		for _, t := range node.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				errs = append(errs, fmt.Errorf("node %s still has taint %s", n.Name, t.Key))
			}
		}
	}
	if err := defaultServiceAccountExists(ctx, cs); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fakeNode returns the Node object kwok takes over; kwok fills in conditions, addresses
// and node info.
func fakeNode(n NodeSpec) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		"type":                 "kwok",
	}
	maps.Copy(labels, n.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Status: corev1.NodeStatus{
			Capacity:    n.Capacity.DeepCopy(),
			Allocatable: n.Capacity.DeepCopy(),
		},
	}
}

func (c *Cluster) controllerManagerComponent() component {
	return c.workloadComponent(binControllerManager, withOverrides([]string{
		"--kubeconfig=" + c.controllerManagerKubeconfig(),
		"--controllers=" + kubeControllerManagerControllers,
		"--service-account-private-key-file=" + c.files.SAKey,
		"--root-ca-file=" + c.files.CACert,
		"--cluster-signing-cert-file=" + c.files.CACert,
		"--cluster-signing-key-file=" + c.files.CAKey,
		"--use-service-account-credentials=true",
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	}, c.extraKCMArgs)...)
}

// controllerManagerKubeconfig writes and returns kube-controller-manager's kubeconfig: its
// own user's, or the admin's in a cluster made before it had one.
func (c *Cluster) controllerManagerKubeconfig() string {
	if !hasControllerManagerToken(c.files) {
		return c.KubeconfigPath
	}
	path := filepath.Join(c.Dir, "controller-manager.kubeconfig")
	if err := os.WriteFile(path, c.Kubeconfig(ControllerManagerUser, controllerManagerToken(c.AdminToken)), 0o600); err != nil {
		c.log.printf("writing %s: %v; kube-controller-manager runs as %s", path, err, AdminUser)
		return c.KubeconfigPath
	}
	return path
}

// withOverrides appends extra flags to defaults, dropping each default flag that extra gives
// again ("--name=value" or "--name").
func withOverrides(defaults, extra []string) []string {
	name := func(arg string) string {
		n, _, _ := strings.Cut(arg, "=")
		return n
	}
	given := map[string]bool{}
	for _, a := range extra {
		given[name(a)] = true
	}
	out := make([]string, 0, len(defaults)+len(extra))
	for _, a := range defaults {
		if !given[name(a)] {
			out = append(out, a)
		}
	}
	return append(out, extra...)
}

func (c *Cluster) schedulerComponent() component {
	return c.workloadComponent(binScheduler,
		"--kubeconfig="+c.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--profiling=false",
	)
}

func (c *Cluster) kwokComponent() component {
	return c.workloadComponent(binKwok,
		"--kubeconfig="+c.KubeconfigPath,
		"--config="+c.binary(kwokStagesFile),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--cidr=10.0.0.1/24",
		"--node-ip=10.0.0.1",
		"--server-address=127.0.0.1:0",
		// Renew node leases like a kubelet, so the node lifecycle controller keeps the fake
		// nodes (and their Pods) Ready for as long as the cluster runs.
		"--node-lease-duration-seconds=40",
	)
}

// workloadComponent is a process that talks to the apiserver and serves nothing; its
// readiness shows in workloadPlaneReady.
func (c *Cluster) workloadComponent(name string, args ...string) component {
	return component{
		name: name,
		spec: func() procSpec {
			return procSpec{name: name, path: c.binary(name), args: args, stateDir: c.Dir, detach: c.detach}
		},
	}
}
