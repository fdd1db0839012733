package register

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/agent"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/memlimit"
)

const (
	// DefaultImage is the agent's image.
	DefaultImage = "ghcr.io/flotilla-io/flotilla-agent:latest"
	// DefaultTimeout bounds the wait for the host to make the agent's identity.
	DefaultTimeout = 2 * time.Minute
	// Deployment names the agent's Deployment in the member.
	Deployment = "flotilla-agent"
)

// Options say what to register and how.
type Options struct {
	// Name of the Cluster in the host.
	Name string
	// Host is the host's address, Token a bootstrap token and CA the host's CA bundle (none:
	// the system's).
	Host, Token string
	CA          []byte
	// Member is an admin REST config of the member.
	Member *rest.Config
	// Image is the agent's image (default DefaultImage; when re-registering, the image of the
	// agent's Deployment is kept unless Image is set); NoDeployment leaves the agent for the
	// caller to run (out of cluster, say, as the local fleet does).
	Image        string
	NoDeployment bool
	// TokenExpiration is the lifetime asked for the agent's first credential.
	TokenExpiration time.Duration
	// AllowRBACEscalation gives the agent's identity in the member escalate and bind (see
	// join.Rights), and records the opt-in on the Cluster.
	AllowRBACEscalation bool
	// Timeout bounds the wait for the host; default DefaultTimeout.
	Timeout time.Duration
}

// Result is what Register did.
type Result struct {
	Cluster      string
	MemberID     string
	TokenExpires time.Time
	// Reregistered is true when the Cluster existed: its agent got a new credential.
	Reregistered bool
}

// Register registers the member as a Pull Cluster and installs its agent. Run again with a
// token made for the existing Cluster (`kubectl flotilla token create NAME`), it re-registers
// it: the agent gets a new host credential, and the Cluster and its Works stay as they are.
func Register(ctx context.Context, o Options) (*Result, error) {
	if err := join.ValidateName(o.Name); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.TokenExpiration <= 0 {
		o.TokenExpiration = agent.DefaultTokenExpiration
	}
	id, err := TokenID(o.Token)
	if err != nil {
		return nil, err
	}
	// The host's admission policy decides; this only says it sooner.
	switch cluster, ok := agentauth.BootstrapCluster(id); {
	case !ok:
		return nil, fmt.Errorf("bootstrap token %s names no cluster (it was made by an older kubectl flotilla): make a new one in the host with `kubectl flotilla token create %s`", id, o.Name)
	case cluster != o.Name:
		return nil, fmt.Errorf("bootstrap token %s registers one cluster, %s, not %s: run `kubectl flotilla register %s ...`, or make a token for %s in the host with `kubectl flotilla token create %s`",
			id, cluster, o.Name, cluster, o.Name, o.Name)
	}
	scheme := flotillascheme.New()
	host, err := client.New(&rest.Config{Host: o.Host, BearerToken: o.Token, TLSClientConfig: rest.TLSClientConfig{CAData: o.CA}, Timeout: 30 * time.Second},
		client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	member, err := client.New(o.Member, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("member: %w", err)
	}
	ns := &corev1.Namespace{}
	if err := member.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err != nil {
		return nil, fmt.Errorf("read the member's kube-system namespace (register needs cluster-admin in the member): %w", err)
	}
	memberID := string(ns.UID)

	// The Cluster as a bootstrap token may create it: what identifies the member, nothing
	// that decides what is placed there (an administrator labels and places it afterwards).
	// The member's own choice of --allow-rbac-escalation is recorded for the host to show.
	annotations := map[string]string{agentauth.BootstrapTokenAnnotation: id}
	if o.AllowRBACEscalation {
		annotations[wellknown.AllowRBACEscalationAnnotation] = "true"
	}
	cluster := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Annotations: annotations},
		Spec:       clusterv1alpha1.ClusterSpec{ID: memberID, SyncMode: clusterv1alpha1.Pull, APIEndpoint: o.Member.Host},
	}
	reregister := false
	switch err := host.Create(ctx, cluster); {
	case apierrors.IsAlreadyExists(err):
		// A Cluster this token was made for exists: the token re-registers it (or this is a
		// second run after a partial failure). The exchange below succeeds only while the
		// Cluster names this token and its agent is not reporting.
		reregister = true
	case apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("the host at %s rejected bootstrap token %s (401): it has expired, was deleted, or was used already "+
			"(a token registers its cluster once; the host deletes it once the agent reports). Make a new one in the host with `kubectl flotilla token create %s`", o.Host, id, o.Name)
	case err != nil:
		return nil, fmt.Errorf("create Cluster %s in the host: %w", o.Name, err)
	}

	// The host's cluster controller makes the agent's identity and binds this token to the
	// exchange; until then the token request is forbidden.
	var token string
	var issued, expires time.Time
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		token, issued, expires, lastErr = agent.RequestToken(ctx, host, o.Name, o.TokenExpiration, time.Now())
		if apierrors.IsForbidden(lastErr) || apierrors.IsNotFound(lastErr) {
			return false, nil
		}
		return lastErr == nil, lastErr
	})
	if err != nil {
		switch {
		case apierrors.IsUnauthorized(lastErr):
			return nil, fmt.Errorf("the host rejected bootstrap token %s (401) before it fetched the agent's credential: it expired, was deleted, or the agent of %s "+
				"reported meanwhile (which consumes it). Make a new one in the host with `kubectl flotilla token create %s`", id, o.Name, o.Name)
		case lastErr != nil && (apierrors.IsForbidden(lastErr) || apierrors.IsNotFound(lastErr)):
			return nil, fmt.Errorf("the host did not let bootstrap token %s fetch the agent's credential within %s (%v): is the Flotilla manager running? "+
				"The exchange is open only while Cluster %s names this token (flotilla.io/bootstrap-token) and its agent is not reporting; "+
				"if the agent reports, it needs no new credential", id, o.Timeout, lastErr, o.Name)
		}
		return nil, fmt.Errorf("fetch the agent's credential: %w", errors.Join(err, lastErr))
	}
	// The agent's credential reads its own Cluster: one registered from another member is not
	// this member's to take over.
	if reregister {
		if err := sameMember(ctx, o, token, memberID); err != nil {
			return nil, err
		}
	}

	// The member side: the agent's identity with the rights a Push join gives the control
	// plane, its host credential, and the agent.
	labels := map[string]string{wellknown.JoinedClusterLabel: o.Name}
	if err := grantAgentAccess(ctx, member, o.Member, o.Name, o.AllowRBACEscalation); err != nil {
		return nil, err
	}
	cred := &agent.Credential{Cluster: o.Name, Server: o.Host, CA: o.CA, Token: token, Issued: issued, Expires: expires}
	if err := agent.ApplySecret(ctx, member, cred.Secret(types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}), FieldManager); err != nil {
		return nil, fmt.Errorf("write the agent's host credential in the member: %w", err)
	}
	if !o.NoDeployment && (o.Image != "" || !reregister || !deploymentExists(ctx, member)) {
		if o.Image == "" {
			o.Image = DefaultImage
		}
		if err := apply(ctx, member, AgentDeployment(o.Image, labels)); err != nil {
			return nil, fmt.Errorf("install the agent in the member: %w", err)
		}
	}
	return &Result{Cluster: o.Name, MemberID: memberID, TokenExpires: expires, Reregistered: reregister}, nil
}

// deploymentExists reports whether the agent's Deployment is in the member (an error counts
// as no: register applies it).
func deploymentExists(ctx context.Context, member client.Client) bool {
	return member.Get(ctx, types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: Deployment}, &appsv1.Deployment{}) == nil
}

// sameMember checks, with the agent's new credential, that the existing Cluster o.Name was
// registered from this member (its spec.id is the member's kube-system namespace UID).
func sameMember(ctx context.Context, o Options, token, memberID string) error {
	as, err := client.New(&rest.Config{Host: o.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: o.CA}, Timeout: 30 * time.Second},
		client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return err
	}
	c := &clusterv1alpha1.Cluster{}
	if err := as.Get(ctx, types.NamespacedName{Name: o.Name}, c); err != nil {
		return fmt.Errorf("read Cluster %s in the host with the agent's credential: %w", o.Name, err)
	}
	if c.Spec.ID != "" && c.Spec.ID != memberID {
		return fmt.Errorf("cluster %s in the host was registered from another member cluster (id %s; this one is %s): nothing was changed here. "+
			"Run register in that member, or choose another name", o.Name, c.Spec.ID, memberID)
	}
	return nil
}

// RefreshAccess brings the rights of the agent of the Pull Cluster name, in the member of
// member (an admin REST config), up to date with the API groups the member serves now (a CRD
// propagated since registration) and with allowRBACEscalation, as register does: the
// agent's Forbidden errors on a Work say to run it. It needs nothing of the host, and so
// leaves the Cluster's annotation as register set it.
func RefreshAccess(ctx context.Context, member *rest.Config, name string, allowRBACEscalation bool) error {
	if err := join.ValidateName(name); err != nil {
		return err
	}
	cl, err := client.New(member, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return fmt.Errorf("member: %w", err)
	}
	return grantAgentAccess(ctx, cl, member, name, allowRBACEscalation)
}

// grantAgentAccess gives the agent's identity in the member the rights a Push join gives the
// control plane.
func grantAgentAccess(ctx context.Context, member client.Client, cfg *rest.Config, name string, allowRBACEscalation bool) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("member: %w", err)
	}
	explain := func(err error, what string) error { return fmt.Errorf("%s in the member: %w", what, err) }
	return join.GrantMemberAccess(ctx, member, kube.Discovery(), agentauth.AgentServiceAccount,
		map[string]string{wellknown.JoinedClusterLabel: name}, join.Rights{AllowRBACEscalation: allowRBACEscalation}, explain)
}

// AgentDeployment is the agent's Deployment in the member.
func AgentDeployment(image string, labels map[string]string) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/name": "flotilla-agent"}
	podLabels := map[string]string{}
	for k, v := range selector {
		podLabels[k] = v
	}
	for k, v := range labels {
		podLabels[k] = v
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: Deployment, Namespace: agentauth.SystemNamespace, Labels: podLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: agentauth.AgentServiceAccount,
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "agent", Image: image, Args: []string{"--leader-elect", "--token-dir=/var/run/flotilla"},
						// The agent's Go soft memory limit is memlimit.Percent of its container's
						// memory limit (its --memory-limit flag): an edge member's memory is scarce.
						Env: []corev1.EnvVar{{Name: memlimit.EnvContainerLimit, ValueFrom: &corev1.EnvVarSource{
							ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "agent", Resource: "limits.memory", Divisor: resourceQuantity("1")}}}},
						Ports:          []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}, {Name: "probes", ContainerPort: 8081}},
						LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstrFromString("probes")}}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstrFromString("probes")}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("50m"), corev1.ResourceMemory: resourceQuantity("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resourceQuantity("256Mi")},
						},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/flotilla"}},
					}},
					Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
				},
			},
		},
	}
}

func intstrFromString(s string) intstr.IntOrString { return intstr.FromString(s) }

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }
