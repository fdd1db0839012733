// Package register is Pull mode's registration: the logic of `kubectl flotilla token
// create`, `register` and `unregister`, callable from tests without exec.
//
// A bootstrap token is a short-lived token of a ServiceAccount made for it in the host
// (agentauth.BootstrapServiceAccount), whose only right is to create Clusters, and an
// admission policy lets it create only a Pull Cluster that names it. Register, run against
// the member with that token, creates the Cluster, waits for the host's cluster controller to
// make the agent's identity, exchanges the bootstrap token for a token of the agent (the only
// other thing the bootstrap token may do, and only for that Cluster, until its agent starts),
// and installs the agent in the member with the same least rights a Push join gives the
// control plane.
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/agentauth"
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
	// ID names the token: its ServiceAccount is flotilla-system/flotilla-bootstrap-<ID>.
	ID string
	// Token is the bearer token.
	Token string
	// Expires is when it stops working.
	Expires time.Time
	// Server and CA are the host's address and CA bundle, from the kubeconfig used.
	Server string
	CA     []byte
}

// Command is the register command to run in the member, with NAME for the cluster's name.
func (t *Token) Command(name string) string {
	cmd := fmt.Sprintf("kubectl flotilla register %s --host %s --token %s", name, t.Server, t.Token)
	if len(t.CA) > 0 {
		cmd += " --ca-data " + base64.StdEncoding.EncodeToString(t.CA)
	}
	return cmd
}

// CreateToken makes a bootstrap token valid for ttl. It also applies what every bootstrap
// token relies on (agentauth.ClusterRoles and the admission policy), so a host installed
// from the CRDs alone works too. host needs rights to write those, ServiceAccounts in
// flotilla-system and ClusterRoleBindings: an administrator's.
func CreateToken(ctx context.Context, host *rest.Config, ttl time.Duration) (*Token, error) {
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
	id, err := newID()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{agentauth.BootstrapTokenLabel: id}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapServiceAccount(id), Namespace: agentauth.SystemNamespace, Labels: labels},
	}
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapBinding(id), Labels: labels},
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
	return &Token{ID: id, Token: tr.Status.Token, Expires: tr.Status.ExpirationTimestamp.Time, Server: host.Host, CA: ca}, nil
}

// DeleteToken removes bootstrap token id: its ServiceAccount (which invalidates the token) and
// binding.
func DeleteToken(ctx context.Context, host *rest.Config, id string) error {
	cl, err := client.New(host, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bootstrapBinding(id)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentauth.BootstrapServiceAccount(id), Namespace: agentauth.SystemNamespace}},
	} {
		if err := cl.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

func bootstrapBinding(id string) string { return "flotilla:bootstrap:" + id }

// newID is six random lowercase letters and digits.
func newID() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
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
	id, ok := agentauth.BootstrapID(claims.Sub)
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
