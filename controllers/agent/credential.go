package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
)

// Credential is the agent's host credential, as kept in the member Secret
// flotilla-system/flotilla-agent-host.
type Credential struct {
	// Cluster is the name of the agent's Cluster in the host.
	Cluster string
	// Server is the host apiserver's URL, CA the CA bundle it is verified with (none: the
	// system's).
	Server string
	CA     []byte
	// Token is a token of the agent's ServiceAccount in the host, issued at Issued and
	// valid until Expires.
	Token           string
	Issued, Expires time.Time
}

// ReadCredential reads the credential from the member Secret key.
func ReadCredential(ctx context.Context, member client.Reader, key types.NamespacedName) (*Credential, error) {
	s := &corev1.Secret{}
	if err := member.Get(ctx, key, s); err != nil {
		return nil, err
	}
	return CredentialFromSecret(s)
}

// CredentialFromSecret decodes a credential Secret.
func CredentialFromSecret(s *corev1.Secret) (*Credential, error) {
	c := &Credential{
		Cluster: string(s.Data[agentauth.SecretKeyCluster]), Server: string(s.Data[agentauth.SecretKeyServer]),
		CA: s.Data[agentauth.SecretKeyCA], Token: string(s.Data[agentauth.SecretKeyToken]),
	}
	for _, k := range []string{agentauth.SecretKeyCluster, agentauth.SecretKeyServer, agentauth.SecretKeyToken} {
		if len(s.Data[k]) == 0 {
			return nil, fmt.Errorf("%w: Secret %s/%s has no %q key (run `kubectl flotilla register` again)", errNoCredential, s.Namespace, s.Name, k)
		}
	}
	for k, t := range map[string]*time.Time{agentauth.SecretKeyIssued: &c.Issued, agentauth.SecretKeyExpires: &c.Expires} {
		if v := s.Data[k]; len(v) > 0 {
			parsed, err := time.Parse(time.RFC3339, string(v))
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: key %q: %w", s.Namespace, s.Name, k, err)
			}
			*t = parsed
		}
	}
	return c, nil
}

// Secret is the Secret that stores c.
func (c *Credential) Secret(key types.NamespacedName) *corev1.Secret {
	data := map[string][]byte{
		agentauth.SecretKeyCluster: []byte(c.Cluster), agentauth.SecretKeyServer: []byte(c.Server),
		agentauth.SecretKeyToken: []byte(c.Token),
	}
	if len(c.CA) > 0 {
		data[agentauth.SecretKeyCA] = c.CA
	}
	if !c.Issued.IsZero() {
		data[agentauth.SecretKeyIssued] = []byte(c.Issued.UTC().Format(time.RFC3339))
	}
	if !c.Expires.IsZero() {
		data[agentauth.SecretKeyExpires] = []byte(c.Expires.UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{wellknown.JoinedClusterLabel: c.Cluster}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// RESTConfig is a config for the host that reads the token from tokenFile, so a rotated
// token is picked up without rebuilding clients.
func (c *Credential) RESTConfig(tokenFile string) *rest.Config {
	cfg := &rest.Config{Host: c.Server, BearerTokenFile: tokenFile, UserAgent: "flotilla-agent"}
	cfg.CAData = c.CA
	return cfg
}

// RequestToken asks the host for a token of the agent of cluster, with the given lifetime,
// using cl's credentials: the agent's own (rotation) or a bootstrap token's (registration).
func RequestToken(ctx context.Context, cl client.Client, cluster string, lifetime time.Duration, now time.Time) (token string, issued, expires time.Time, err error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentauth.AgentServiceAccount, Namespace: wellknown.ExecutionNamespace(cluster)}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(lifetime.Seconds()))}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", time.Time{}, time.Time{}, fmt.Errorf("request a token of %s/%s in the host: %w", sa.Namespace, sa.Name, err)
	}
	return tr.Status.Token, now, tr.Status.ExpirationTimestamp.Time, nil
}

func writeToken(path, token string) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return fmt.Errorf("write the host token: %w", err)
	}
	return os.Rename(tmp, path)
}

// rotator keeps the token file in line with the credential Secret, and, on the elected
// replica, rotates the credential once agentauth.RotationDue says so.
type rotator struct {
	host       client.Client
	member     client.Client
	secret     types.NamespacedName
	tokenFile  string
	cluster    string
	interval   time.Duration
	expiration time.Duration
	elected    <-chan struct{}
	current    *Credential
}

// NeedLeaderElection is false: every replica follows the Secret; only the elected one
// rotates.
func (r *rotator) NeedLeaderElection() bool { return false }

func (r *rotator) Start(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if err := r.check(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot check or rotate the host credential; trying again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// follow reads the credential Secret, and puts a credential there that is not the current
// one (rotated by another replica, or written by a new `kubectl flotilla register`) in the
// token file.
func (r *rotator) follow(ctx context.Context) (*Credential, error) {
	cred, err := ReadCredential(ctx, r.member, r.secret)
	if err != nil {
		return nil, err
	}
	if cred.Token != r.current.Token {
		if err := writeToken(r.tokenFile, cred.Token); err != nil {
			return nil, err
		}
		r.current = cred
		ctrl.LoggerFrom(ctx).Info("Picked up a new host credential", "expires", cred.Expires)
	}
	return cred, nil
}

func (r *rotator) check(ctx context.Context) error {
	cred, err := r.follow(ctx)
	if err != nil {
		return err
	}
	select {
	case <-r.elected:
	default:
		return nil
	}
	now := time.Now()
	if !agentauth.RotationDue(cred.Issued, cred.Expires, now) {
		return nil
	}
	token, issued, expires, err := RequestToken(ctx, r.host, r.cluster, r.expiration, now)
	if err != nil {
		return Rejected(cred, err)
	}
	next := *cred
	next.Token, next.Issued, next.Expires = token, issued, expires
	if err := ApplySecret(ctx, r.member, next.Secret(r.secret), FieldOwner); err != nil {
		return fmt.Errorf("store the rotated credential in Secret %s: %w", r.secret, err)
	}
	if err := writeToken(r.tokenFile, token); err != nil {
		return err
	}
	r.current = &next
	ctrl.LoggerFrom(ctx).Info("Rotated the host credential", "expires", expires)
	return nil
}

// Rejected explains err when it says the host rejected the agent's credential (401): an
// agent offline past its credential's expiry cannot get a new one by itself, and the error
// says which commands give it one. Other errors are returned as they are.
func Rejected(cred *Credential, err error) error {
	if !apierrors.IsUnauthorized(err) {
		return err
	}
	why := "it was revoked, or its ServiceAccount was deleted"
	if !cred.Expires.IsZero() && time.Now().After(cred.Expires) {
		why = "it expired at " + cred.Expires.UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("the host rejected the agent's credential (401 Unauthorized: %s), and an agent cannot renew a credential the host rejects. "+
		"To give it a new one, keeping Cluster %s, its Works and its workloads as they are: in the host run `kubectl flotilla token create %s`, "+
		"then in this member cluster run the `kubectl flotilla register %s ...` command it prints; the agent picks the new credential up by itself: %w",
		why, cred.Cluster, cred.Cluster, cred.Cluster, err)
}

// ApplySecret server-side applies s as owner.
func ApplySecret(ctx context.Context, cl client.Client, s *corev1.Secret, owner string) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return err
	}
	return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: content}), client.FieldOwner(owner), client.ForceOwnership)
}
