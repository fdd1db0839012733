// Package register is Pull mode's registration: the logic of `kubectl flotilla token
// create`, `register` and `unregister`, callable from tests without exec.
//
// A bootstrap token is a short-lived token of a ServiceAccount made for it in the host
// (agentauth.BootstrapServiceAccount), for one Cluster named when it is made: its only right
// is to create Clusters, and an admission policy lets it create only that Pull Cluster,
// naming the token, with nothing that decides placement (labels, taints, provider, region,
// zones: an administrator sets them afterwards). Register, run against the member with that
// token, creates the Cluster, waits for the host's cluster controller to make the agent's
// identity, exchanges the bootstrap token for a token of the agent (the only other thing the
// bootstrap token may do, and only for that Cluster, while its agent is not reporting), and
// installs the agent in the member with the same least rights a Push join gives the control
// plane. Once the agent reports, the host consumes the bootstrap token.
//
// A token made for a Cluster that exists re-registers it: register, run again in its member,
// fetches a new credential for the agent (one that was offline past its credential's expiry)
// and leaves the Cluster, its Works and its workloads as they are.
package register

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/join"
)

const (
	// DefaultTokenTTL is how long a bootstrap token is valid.
	DefaultTokenTTL = time.Hour
	// MinTokenTTL is the shortest lifetime the TokenRequest API grants.
	MinTokenTTL = 10 * time.Minute
	// FieldManager owns what token create and register write.
	FieldManager = "kubectl-flotilla"
)

// Token is a bootstrap token.
type Token struct {
	// ID names the token: its ServiceAccount is flotilla-system/flotilla-bootstrap-<ID>. It
	// is the Cluster's name, a dash and six random characters (agentauth.BootstrapID).
	ID string
	// Cluster is the one Cluster the token may register.
	Cluster string
	// Token is the bearer token.
	Token string
	// Expires is when it stops working.
	Expires time.Time
	// Server and CA are the host's address and CA bundle, from the kubeconfig used.
	Server string
	CA     []byte
	// Reregisters is true when Cluster exists already: the token re-establishes its agent's
	// credential. AgentReporting says that agent reports now (the token is consumed at once,
	// and useless).
	Reregisters, AgentReporting bool
}

// Command is the register command to run in the member.
func (t *Token) Command() string {
	cmd := fmt.Sprintf("kubectl flotilla register %s --host %s --token %s", t.Cluster, t.Server, t.Token)
	if len(t.CA) > 0 {
		cmd += " --ca-data " + base64.StdEncoding.EncodeToString(t.CA)
	}
	return cmd
}

// CreateToken makes a bootstrap token, valid for ttl, that may register the Pull Cluster
// cluster once. When that Cluster exists (a Pull member whose agent lost its credential), the
// token re-registers it: CreateToken names the token in the Cluster's
// agentauth.BootstrapTokenAnnotation, which opens its exchange while the agent is not
// reporting. It also applies what every bootstrap token relies on (agentauth.ClusterRoles and
// the admission policy), so a host installed from the CRDs alone works too. host needs rights
// to write those, ServiceAccounts in flotilla-system, ClusterRoleBindings and Clusters: an
// administrator's.
func CreateToken(ctx context.Context, host *rest.Config, cluster string, ttl time.Duration) (*Token, error) {
	if err := join.ValidateName(cluster); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < MinTokenTTL {
		return nil, fmt.Errorf("--ttl %s is too short: the TokenRequest API grants at least %s", ttl, MinTokenTTL)
	}
	cl, err := client.New(host, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return nil, err
	}
	existing := &clusterv1alpha1.Cluster{}
	switch err := cl.Get(ctx, types.NamespacedName{Name: cluster}, existing); {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return nil, fmt.Errorf("read Cluster %s in the host: %w", cluster, err)
	case existing.Spec.SyncMode != clusterv1alpha1.Pull:
		return nil, fmt.Errorf("cluster %s is joined in %s mode: a bootstrap token registers a Pull cluster; unjoin it first (`kubectl flotilla unjoin %s`) or choose another name",
			cluster, existing.Spec.SyncMode, cluster)
	case existing.DeletionTimestamp != nil:
		return nil, fmt.Errorf("cluster %s is being deleted: wait until it is gone", cluster)
	}
	for i := range agentauth.ClusterRoles() {
		if err := apply(ctx, cl, &agentauth.ClusterRoles()[i]); err != nil {
			return nil, err
		}
	}
	policy, binding := agentauth.BootstrapPolicy()
	for _, obj := range []client.Object{policy, binding} {
		if err := apply(ctx, cl, obj); err != nil {
			return nil, err
		}
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentauth.SystemNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s in the host: %w", agentauth.SystemNamespace, err)
	}
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	id := agentauth.BootstrapID(cluster, nonce)
	labels := map[string]string{agentauth.BootstrapTokenLabel: id}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapServiceAccount(id), Namespace: agentauth.SystemNamespace, Labels: labels},
	}
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapBinding(id), Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentauth.BootstrapRole},
		Subjects:   []rbacv1.Subject{agentauth.Subject(agentauth.SystemNamespace, sa.Name)},
	}
	for _, obj := range []client.Object{sa, crb} {
		if err := apply(ctx, cl, obj); err != nil {
			return nil, err
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("request a token of %s/%s in the host: %w", sa.Namespace, sa.Name, err)
	}
	ca := host.CAData
	if len(ca) == 0 && host.CAFile != "" {
		if ca, err = os.ReadFile(host.CAFile); err != nil {
			return nil, fmt.Errorf("read the host's CA: %w", err)
		}
	}
	t := &Token{ID: id, Cluster: cluster, Token: tr.Status.Token, Expires: tr.Status.ExpirationTimestamp.Time, Server: host.Host, CA: ca}
	if existing != nil {
		// The token may fetch the agent's credential once the cluster controller sees this.
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, agentauth.BootstrapTokenAnnotation, id))
		if err := cl.Patch(ctx, existing, patch, client.FieldOwner(FieldManager)); err != nil {
			return nil, fmt.Errorf("name the token on Cluster %s: %w", cluster, err)
		}
		t.Reregisters = true
		t.AgentReporting = meta.IsStatusConditionTrue(existing.Status.Conditions, wellknown.ClusterConditionReady)
	}
	return t, nil
}

// DeleteToken removes bootstrap token id: its ServiceAccount (which invalidates the token) and
// binding.
func DeleteToken(ctx context.Context, host *rest.Config, id string) error {
	cl, err := client.New(host, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapBinding(id)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapServiceAccount(id), Namespace: agentauth.SystemNamespace}},
	} {
		if err := cl.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// newNonce is agentauth.BootstrapNonceLength random lowercase letters and digits.
func newNonce() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, agentauth.BootstrapNonceLength)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// TokenID returns the id of a bootstrap token, read from its (unverified) claims: the host
// verifies the token, and its admission policy the id.
func TokenID(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("the token is not a bootstrap token from `kubectl flotilla token create`: it is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("the token is not a bootstrap token from `kubectl flotilla token create`: %w", err)
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("the token is not a bootstrap token from `kubectl flotilla token create`: %w", err)
	}
	id, ok := agentauth.BootstrapUserID(claims.Sub)
	if !ok || id == "" {
		return "", fmt.Errorf("the token belongs to %q, not to a bootstrap token from `kubectl flotilla token create`", claims.Sub)
	}
	return id, nil
}

// apply server-side applies obj, which must carry its apiVersion and kind.
func apply(ctx context.Context, cl client.Client, obj client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	return nil
}
