// Package join joins a member cluster to the host in Push mode, and unjoins it: the logic of
// `kubectl flotilla join`, `unjoin` and `get clusters`, callable from tests without exec.
//
// Join gives the control plane its own identity in the member (ServiceAccount
// flotilla-system/flotilla-<name>, bound to the least rights it needs for the member's API
// groups, see MemberRules, and guarded by an admission policy, see MemberGuard), asks
// the member for a token of it with the TokenRequest API (members without a token controller
// work too), stores the token and the member's CA in the host Secret flotilla-system/<name>,
// and writes the Cluster. Joining again under the same name issues a new token, which is how
// a token is rotated, and how the credential's rights are brought up to date with API groups
// the member serves since (a CRD propagated later) or with other options; the cluster
// controller reconnects as soon as the Secret changes.
package join

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

const (
	// DefaultTokenExpiration is how long a token issued by join is valid. The member's
	// apiserver may cap it (--service-account-max-token-expiration).
	DefaultTokenExpiration = 365 * 24 * time.Hour
	// MaxNameLength bounds Cluster names: karmada-es-<name> must be a namespace name.
	MaxNameLength = 48
	// FieldManager owns what join writes.
	FieldManager = "kubectl-flotilla"
)

// Options say what to join and how.
type Options struct {
	// Name of the Cluster in the host.
	Name string
	// Host and Member are REST configs with admin rights in the host and in the member. The
	// member's server address and CA become the Cluster's apiEndpoint and caBundle, so the
	// host must reach the member at that address.
	Host, Member *rest.Config
	// Provider, Region and Zone describe where the member runs; empty ones leave what an
	// earlier join set.
	Provider, Region, Zone string
	// ClusterAdmin binds cluster-admin instead of MemberRules, without a guard: an explicit
	// escape hatch for members where the control plane must do what the least rights forbid.
	ClusterAdmin bool
	// AllowRBACEscalation gives the credential escalate and bind on Roles and ClusterRoles and
	// writes of ClusterRoleBindings (see Rights), and records the opt-in on the Cluster
	// (wellknown.AllowRBACEscalationAnnotation).
	AllowRBACEscalation bool
	// TokenExpiration is the lifetime asked for the token; default DefaultTokenExpiration.
	TokenExpiration time.Duration
}

// Result is what Join did.
type Result struct {
	// Cluster as written to the host.
	Cluster *clusterv1alpha1.Cluster
	// MemberID is the UID of the member's kube-system namespace, the Cluster's spec.id.
	MemberID string
	// Rejoined is true when the Cluster existed: its token was rotated.
	Rejoined bool
	// TokenExpires is when the new token stops working.
	TokenExpires time.Time
}

// Join joins the member to the host under o.Name, or rotates its token if it is joined
// under that name already. It refuses a member joined under another name, and a name used by
// another member.
func Join(ctx context.Context, o Options) (*Result, error) {
	if err := ValidateName(o.Name); err != nil {
		return nil, err
	}
	if o.TokenExpiration <= 0 {
		o.TokenExpiration = DefaultTokenExpiration
	}
	c, err := connect(o.Host, o.Member)
	if err != nil {
		return nil, err
	}
	memberID, err := c.memberID(ctx)
	if err != nil {
		return nil, err
	}
	clusters, err := c.clusters(ctx)
	if err != nil {
		return nil, err
	}
	existing, err := CheckJoinable(clusters, o.Name, memberID)
	if err != nil {
		return nil, err
	}
	if err := c.grantAccess(ctx, o.Name, Rights{ClusterAdmin: o.ClusterAdmin, AllowRBACEscalation: o.AllowRBACEscalation}); err != nil {
		return nil, err
	}
	token, expires, err := c.requestToken(ctx, o.Name, o.TokenExpiration)
	if err != nil {
		return nil, err
	}
	caBundle, err := caBundle(o.Member)
	if err != nil {
		return nil, err
	}
	if err := c.writeSecret(ctx, o.Name, token, caBundle); err != nil {
		return nil, err
	}
	cluster, err := c.writeCluster(ctx, o, memberID)
	if err != nil {
		return nil, err
	}
	return &Result{Cluster: cluster, MemberID: memberID, Rejoined: existing != nil, TokenExpires: expires}, nil
}

// ValidateName checks that name can name a Cluster: a DNS label of at most MaxNameLength
// characters, since it becomes part of the namespace karmada-es-<name>.
func ValidateName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return newError(ErrInvalidName, "invalid cluster name %q: %s", name, errs[0])
	}
	if len(name) > MaxNameLength {
		return newError(ErrInvalidName, "invalid cluster name %q: at most %d characters, since it names the namespace %s<name>",
			name, MaxNameLength, wellknown.ExecutionNamespacePrefix)
	}
	return nil
}

// CheckJoinable decides whether the member whose ID is memberID may be joined as name, given
// the Clusters the host has. It returns the Cluster of that name if there is one (a re-join).
// A name taken by another member is reported before the member being joined elsewhere.
func CheckJoinable(clusters []clusterv1alpha1.Cluster, name, memberID string) (*clusterv1alpha1.Cluster, error) {
	var existing *clusterv1alpha1.Cluster
	for i := range clusters {
		c := &clusters[i]
		if c.Name != name {
			continue
		}
		switch {
		case c.Spec.ID != "" && c.Spec.ID != memberID:
			return nil, newError(ErrNameTaken, "a Cluster named %q already exists for another member (id %s, endpoint %s; this one is id %s): "+
				"choose another name, or `kubectl flotilla unjoin %s` first", name, c.Spec.ID, c.Spec.APIEndpoint, memberID, name)
		case !c.DeletionTimestamp.IsZero():
			return nil, newError(ErrNameTaken, "Cluster %q is being deleted: wait until it is gone, then join again", name)
		}
		existing = c
	}
	for i := range clusters {
		if c := &clusters[i]; c.Name != name && c.Spec.ID == memberID {
			return nil, newError(ErrAlreadyJoined, "this member (id %s) is already joined as Cluster %q: "+
				"run `kubectl flotilla join %s --cluster-kubeconfig <its kubeconfig>` to rotate its token, or `kubectl flotilla unjoin %s` before joining it under another name",
				memberID, c.Name, c.Name, c.Name)
		}
	}
	return existing, nil
}

// clients talk to the host and the member.
type clients struct {
	host, member         client.Client
	hostKube, memberKube kubernetes.Interface
	hostSide, memberSide side
}

func connect(host, member *rest.Config) (*clients, error) {
	if host == nil || member == nil {
		return nil, fmt.Errorf("join needs both a host and a member kubeconfig")
	}
	c := &clients{
		hostSide:   side{role: "host", endpoint: host.Host, flag: "--kubeconfig"},
		memberSide: side{role: "member", endpoint: member.Host, flag: "--cluster-kubeconfig"},
	}
	var err error
	if c.host, c.hostKube, err = newClient(host, flotillascheme.New()); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if c.member, c.memberKube, err = newClient(member, clientgoscheme.Scheme); err != nil {
		return nil, fmt.Errorf("member: %w", err)
	}
	return c, nil
}

func newClient(cfg *rest.Config, scheme *runtime.Scheme) (client.Client, kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = FieldManager
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	return cl, kube, nil
}

// memberID is the UID of the member's kube-system namespace. Reading it is also the first
// contact with the member, which tells an unreachable member from rejected credentials.
func (c *clients) memberID(ctx context.Context) (string, error) {
	ns, err := c.memberKube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", c.memberSide.explain(err, "read the kube-system namespace")
	}
	return string(ns.UID), nil
}

// clusters lists the host's Clusters, after checking that the host serves them.
func (c *clients) clusters(ctx context.Context) ([]clusterv1alpha1.Cluster, error) {
	gv := clusterv1alpha1.GroupVersion.String()
	if _, err := c.hostKube.Discovery().ServerResourcesForGroupVersion(gv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, newError(ErrNotInstalled, "the host at %s does not serve %s Clusters: install Flotilla in the host first, "+
				"or point --kubeconfig at the host", c.hostSide.endpoint, gv)
		}
		return nil, c.hostSide.explain(err, "discover "+gv)
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := c.host.List(ctx, list); err != nil {
		return nil, c.hostSide.explain(err, "list Clusters")
	}
	return list.Items, nil
}

// grantAccess makes the control plane's ServiceAccount in the member and binds it to
// MemberRules for the member's API groups of the moment, or to cluster-admin.
func (c *clients) grantAccess(ctx context.Context, name string, rights Rights) error {
	return GrantMemberAccess(ctx, c.member, c.memberKube.Discovery(), wellknown.MemberAccessName(name),
		map[string]string{wellknown.JoinedClusterLabel: name}, rights, c.memberSide.explain)
}

// GrantMemberAccess makes the ServiceAccount flotilla-system/<access> in the member and binds
// it, through the ClusterRole and ClusterRoleBinding <access>, to MemberRules for the API
// groups the member serves now (dc's), guarded by MemberGuard; or, with rights.ClusterAdmin,
// to cluster-admin without a guard. It is the control plane's identity for a Push member, the
// agent's for a Pull one. Run again, it brings the rules up to date with the member's groups
// and the rights asked for. explain turns an error of a step into the one returned.
func GrantMemberAccess(ctx context.Context, member client.Client, dc discovery.DiscoveryInterface, access string, labels map[string]string,
	rights Rights, explain func(err error, what string) error) error {
	if err := ensureNamespace(ctx, member, wellknown.SystemNamespace); err != nil {
		return explain(err, "create namespace "+wellknown.SystemNamespace)
	}
	var groups []string
	if !rights.ClusterAdmin {
		var err error
		if groups, err = ServedGroups(ctx, dc); err != nil {
			return explain(err, "discover the API groups")
		}
	}
	sa, cr, _ := MemberAccessObjects(access, labels, groups, rights.AllowRBACEscalation)
	policy, policyBinding := MemberGuard(access, labels, rights.AllowRBACEscalation)

	role := access
	var apply, remove []client.Object
	if rights.ClusterAdmin {
		role = ClusterAdminRole
		apply = []client.Object{sa}
		remove = []client.Object{policyBinding, policy, cr}
	} else {
		// The guard first: the credential is never bound without it.
		apply = []client.Object{policy, policyBinding, sa, cr}
	}
	for _, obj := range apply {
		if err := applyObject(ctx, member, obj); err != nil {
			return explain(err, "apply "+obj.GetObjectKind().GroupVersionKind().Kind+" "+describe(obj))
		}
	}
	for _, obj := range remove {
		if err := deleteIfExists(ctx, member, obj); err != nil {
			return explain(err, "delete "+obj.GetObjectKind().GroupVersionKind().Kind+" "+describe(obj))
		}
	}

	// A binding's roleRef cannot change: replace a binding to the other role.
	crb := &rbacv1.ClusterRoleBinding{}
	switch err := member.Get(ctx, client.ObjectKey{Name: access}, crb); {
	case err == nil && crb.RoleRef.Name != role:
		if err := deleteIfExists(ctx, member, crb); err != nil {
			return explain(err, "replace ClusterRoleBinding "+access)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return explain(err, "read ClusterRoleBinding "+access)
	}
	binding := rbacv1ac.ClusterRoleBinding(access).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(access).WithNamespace(wellknown.SystemNamespace))
	if err := member.Apply(ctx, binding, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return explain(err, "create ClusterRoleBinding "+access)
	}
	return nil
}

// applyObject server-side applies a typed object that carries its apiVersion and kind, as
// FieldManager: what it sets replaces what an earlier join set (a ClusterRole's rules whole).
func applyObject(ctx context.Context, cl client.Client, obj client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
}

// RemoveMemberAccess deletes what GrantMemberAccess made in the member for <access>, and
// returns what it found and deleted, as "Kind name".
func RemoveMemberAccess(ctx context.Context, member client.Client, access string) ([]string, error) {
	policy, policyBinding := MemberGuard(access, nil, false)
	sa, cr, crb := MemberAccessObjects(access, nil, nil, false)
	var removed []string
	for _, obj := range []client.Object{crb, cr, sa, policyBinding, policy} {
		what := obj.GetObjectKind().GroupVersionKind().Kind + " " + describe(obj)
		err := member.Delete(ctx, obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return removed, fmt.Errorf("delete %s: %w", what, err)
		default:
			removed = append(removed, what)
		}
	}
	return removed, nil
}

// requestToken asks the member for a token of the control plane's ServiceAccount.
func (c *clients) requestToken(ctx context.Context, name string, ttl time.Duration) (string, time.Time, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: wellknown.MemberAccessName(name), Namespace: wellknown.SystemNamespace}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))}}
	if err := c.member.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", time.Time{}, c.memberSide.explain(err, "request a token for ServiceAccount "+client.ObjectKeyFromObject(sa).String())
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// caBundle is the CA the member's kubeconfig trusts, or nil when it trusts the system's.
func caBundle(member *rest.Config) ([]byte, error) {
	switch {
	case member.Insecure:
		return nil, nil
	case len(member.CAData) > 0:
		return member.CAData, nil
	case member.CAFile != "":
		b, err := os.ReadFile(member.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the member's CA: %w", err)
		}
		return b, nil
	}
	return nil, nil
}

// writeSecret writes the host Secret flotilla-system/<name> with the member's token and CA.
func (c *clients) writeSecret(ctx context.Context, name, token string, caBundle []byte) error {
	if err := ensureNamespace(ctx, c.host, wellknown.SystemNamespace); err != nil {
		return c.hostSide.explain(err, "create namespace "+wellknown.SystemNamespace)
	}
	data := map[string][]byte{wellknown.SecretKeyToken: []byte(token)}
	if len(caBundle) > 0 {
		data[wellknown.SecretKeyCABundle] = caBundle
	}
	secret := corev1ac.Secret(name, wellknown.SystemNamespace).
		WithLabels(map[string]string{wellknown.JoinedClusterLabel: name}).
		WithType(corev1.SecretTypeOpaque).WithData(data)
	if err := c.host.Apply(ctx, secret, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return c.hostSide.explain(err, "write Secret "+wellknown.SystemNamespace+"/"+name)
	}
	return nil
}

// writeCluster creates the Cluster or brings the fields join owns up to date, leaving the
// rest (taints, resource models, labels) as they are.
func (c *clients) writeCluster(ctx context.Context, o Options, memberID string) (*clusterv1alpha1.Cluster, error) {
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: o.Name}}
	_, err := controllerutil.CreateOrPatch(ctx, c.host, cluster, func() error {
		s := &cluster.Spec
		s.ID = memberID
		s.SyncMode = clusterv1alpha1.Push
		s.APIEndpoint = o.Member.Host
		s.SecretRef = &clusterv1alpha1.LocalSecretReference{Namespace: wellknown.SystemNamespace, Name: o.Name}
		s.InsecureSkipTLSVerification = o.Member.Insecure
		if o.Provider != "" {
			s.Provider = o.Provider
		}
		if o.Region != "" {
			s.Region = o.Region
		}
		if o.Zone != "" {
			s.Zones = []string{o.Zone}
		}
		if o.AllowRBACEscalation {
			metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, wellknown.AllowRBACEscalationAnnotation, "true")
		} else {
			delete(cluster.Annotations, wellknown.AllowRBACEscalationAnnotation)
		}
		return nil
	})
	if err != nil {
		return nil, c.hostSide.explain(err, "write Cluster "+o.Name)
	}
	return cluster, nil
}

// ensureNamespace creates the namespace when it does not exist. It looks first, so that an
// identity that may not create namespaces (the manager joining a Cluster API cluster, whose
// guard denies the create before the apiserver could answer AlreadyExists) gets through when
// the namespace is there.
func ensureNamespace(ctx context.Context, cl client.Client, name string) error {
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}); err == nil {
		return nil
	}
	err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func deleteIfExists(ctx context.Context, cl client.Client, obj client.Object) error {
	return client.IgnoreNotFound(cl.Delete(ctx, obj))
}
