// Package interpreterwebhook calls the interpreter webhooks of
// ResourceInterpreterWebhookConfigurations over HTTPS, as Karmada's interpreter webhook
// protocol defines (a ResourceInterpreterContext posted, one answered), and serves them to the
// interpreter as its Customizations: a Registry holds the webhooks in use (Apply, Remove), and
// Lookup gives, for a kind, the webhook of each operation: the first, by
// "configuration/webhook" name, whose rules match (Karmada's choice).
//
// A call that fails (unreachable, TLS, timeout, an HTTP error, an answer that does not decode,
// carries another uid, is unsuccessful, lacks the operation's field, or whose patch does not
// apply) fails the operation with an error naming the webhook, its configuration, the
// operation and the object: Karmada has no failure policy for interpreter webhooks and fails
// the operation too. Every failure is also reported to Options.OnFailure.
package interpreterwebhook

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// DefaultTimeout is a webhook's timeout when its configuration sets none (Karmada's 10s).
const DefaultTimeout = 10 * time.Second

// Failure is a call that failed.
type Failure struct {
	// Configuration and Webhook name the webhook.
	Configuration, Webhook string
	// Operation is the protocol's name of the operation (InterpretReplica, ...).
	Operation configv1alpha1.InterpreterOperation
	// Object is "apiVersion/kind namespace/name" of the object of the call.
	Object string
	// Err is the error, as the caller got it.
	Err error
}

// Options configure a Registry.
type Options struct {
	// OnFailure is called, synchronously, whenever a call fails; it must be cheap.
	OnFailure func(Failure)
	// Transport, when set, makes each webhook's transport from its TLS configuration (tests).
	Transport func(*tls.Config) http.RoundTripper
}

// Hook is one webhook in use.
type Hook struct {
	Configuration string
	Name          string
	rules         []configv1alpha1.RuleWithOperations
	url           string
	timeout       time.Duration
	client        *http.Client
	registry      *Registry
	configHash    string
}

// ID is "configuration/webhook", by which the first matching webhook is chosen.
func (h *Hook) ID() string { return h.Configuration + "/" + h.Name }

// URL is where the webhook is called.
func (h *Hook) URL() string { return h.url }

// Registry holds the webhooks in use. It implements interpreter.Customizations and is safe
// for concurrent use.
type Registry struct {
	o Options

	mu       sync.Mutex // serializes Apply and Remove
	byConfig map[string]configHooks
	index    atomic.Pointer[index]
}

type configHooks struct {
	hooks []*Hook
	hash  string
}

// index is the hooks in use, sorted by ID, and the kinds looked up so far.
type index struct {
	hooks []*Hook
	kinds sync.Map // schema.GroupVersionKind -> *kindHooks (nil: none)
}

var _ interpreter.Customizations = (*Registry)(nil)

// NewRegistry makes an empty registry.
func NewRegistry(o Options) *Registry {
	r := &Registry{o: o, byConfig: map[string]configHooks{}}
	r.index.Store(&index{})
	return r
}

// Apply puts the configuration's webhooks in use, in place of its earlier version. When a
// webhook's client config is unusable (a bad URL, a CA bundle without a certificate), none of
// the configuration's webhooks is in use and the error names the webhook and the field.
func (r *Registry) Apply(cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration) error {
	if cfg == nil || cfg.Name == "" {
		return errors.New("no configuration name")
	}
	hooks, hash, err := r.compile(cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		old := r.byConfig[cfg.Name]
		delete(r.byConfig, cfg.Name)
		r.reindex()
		old.close()
		return err
	}
	old, had := r.byConfig[cfg.Name]
	if had && old.hash == hash {
		return nil
	}
	r.byConfig[cfg.Name] = configHooks{hooks: hooks, hash: hash}
	r.reindex()
	old.close()
	return nil
}

// close lets go of the idle connections of hooks out of use (calls in flight finish).
func (c configHooks) close() {
	for _, h := range c.hooks {
		h.client.CloseIdleConnections()
	}
}

// Remove takes the configuration's webhooks out of use.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byConfig[name]; ok {
		delete(r.byConfig, name)
		r.reindex()
		old.close()
	}
}

// Hooks returns the webhooks in use, by ID.
func (r *Registry) Hooks() []*Hook { return slices.Clone(r.index.Load().hooks) }

func (r *Registry) reindex() {
	var all []*Hook
	for _, c := range r.byConfig {
		all = append(all, c.hooks...)
	}
	slices.SortFunc(all, func(a, b *Hook) int { return strings.Compare(a.ID(), b.ID()) })
	r.index.Store(&index{hooks: all})
}

// compile checks a configuration and makes its hooks.
func (r *Registry) compile(cfg *configv1alpha1.ResourceInterpreterWebhookConfiguration) ([]*Hook, string, error) {
	h := sha256.New()
	var hooks []*Hook
	seen := map[string]bool{}
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if w.Name == "" {
			return nil, "", fmt.Errorf("webhooks[%d].name is empty", i)
		}
		if seen[w.Name] {
			return nil, "", fmt.Errorf("webhooks[%d]: webhook %q is named twice", i, w.Name)
		}
		seen[w.Name] = true
		if !slices.Contains(w.InterpreterContextVersions, configv1alpha1.GroupVersion.Version) {
			return nil, "", fmt.Errorf("webhook %q: interpreterContextVersions %v does not include v1alpha1, the only version Flotilla speaks", w.Name, w.InterpreterContextVersions)
		}
		u, err := Endpoint(w.ClientConfig)
		if err != nil {
			return nil, "", fmt.Errorf("webhook %q: %w", w.Name, err)
		}
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if len(w.ClientConfig.CABundle) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(w.ClientConfig.CABundle) {
				return nil, "", fmt.Errorf("webhook %q: clientConfig.caBundle holds no PEM certificate", w.Name)
			}
			tlsConfig.RootCAs = pool
		}
		timeout := DefaultTimeout
		if w.TimeoutSeconds != nil {
			if *w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 30 {
				return nil, "", fmt.Errorf("webhook %q: timeoutSeconds %d is not between 1 and 30", w.Name, *w.TimeoutSeconds)
			}
			timeout = time.Duration(*w.TimeoutSeconds) * time.Second
		}
		for j, rule := range w.Rules {
			for _, op := range rule.Operations {
				if !knownOperation(op) {
					return nil, "", fmt.Errorf("webhook %q: rules[%d]: unknown operation %q", w.Name, j, op)
				}
			}
		}
		var rt http.RoundTripper
		if r.o.Transport != nil {
			rt = r.o.Transport(tlsConfig)
		} else {
			rt = &http.Transport{
				// No proxy: the webhook is the cluster's (a Service) or named by its URL.
				Proxy:               nil,
				DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
				TLSClientConfig:     tlsConfig,
				TLSHandshakeTimeout: timeout,
				MaxIdleConnsPerHost: 4,
				IdleConnTimeout:     90 * time.Second,
				ForceAttemptHTTP2:   true,
			}
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%v\x00", w.Name, u, w.ClientConfig.CABundle, timeout, w.Rules)
		hooks = append(hooks, &Hook{Configuration: cfg.Name, Name: w.Name, rules: w.Rules, url: u, timeout: timeout,
			client: &http.Client{Transport: rt, CheckRedirect: noRedirect}, registry: r})
	}
	hash := hex.EncodeToString(h.Sum(nil))[:16]
	for _, hook := range hooks {
		hook.configHash = hash
	}
	return hooks, hash, nil
}

// noRedirect refuses redirects: the webhook is the URL it is configured with.
func noRedirect(*http.Request, []*http.Request) error {
	return errors.New("the webhook answered with a redirect, which is not followed")
}

// Endpoint is the URL a client config names: its url, or for a service
// https://NAME.NAMESPACE.svc:PORT/PATH (port 443 by default). Service wins over url, as in
// Karmada. The URL must be https, with a host and no user, query or fragment.
func Endpoint(cc admissionregistrationv1.WebhookClientConfig) (string, error) {
	if s := cc.Service; s != nil {
		if s.Name == "" || s.Namespace == "" {
			return "", errors.New("clientConfig.service needs a name and a namespace")
		}
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		if port < 1 || port > 65535 {
			return "", fmt.Errorf("clientConfig.service.port %d is not a port", port)
		}
		path := ""
		if s.Path != nil {
			path = *s.Path
			if path != "" && !strings.HasPrefix(path, "/") {
				return "", fmt.Errorf("clientConfig.service.path %q must start with /", path)
			}
		}
		return "https://" + s.Name + "." + s.Namespace + ".svc:" + strconv.Itoa(int(port)) + path, nil
	}
	if cc.URL == nil || *cc.URL == "" {
		return "", errors.New("clientConfig sets neither url nor service")
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return "", fmt.Errorf("clientConfig.url: %w", err)
	}
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("clientConfig.url %q is not https", *cc.URL)
	case u.Host == "":
		return "", fmt.Errorf("clientConfig.url %q has no host", *cc.URL)
	case u.User != nil:
		return "", fmt.Errorf("clientConfig.url %q may not have a user", *cc.URL)
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(*cc.URL, "?#"):
		return "", fmt.Errorf("clientConfig.url %q may not have a query or a fragment", *cc.URL)
	}
	return u.String(), nil
}

// The protocol's name of each operation the interpreter asks webhooks for.
var protocolOps = map[interpreter.Operation]configv1alpha1.InterpreterOperation{
	interpreter.OperationGetReplicas:         configv1alpha1.InterpreterOperationInterpretReplica,
	interpreter.OperationReviseReplica:       configv1alpha1.InterpreterOperationReviseReplica,
	interpreter.OperationRetain:              configv1alpha1.InterpreterOperationRetain,
	interpreter.OperationReflectStatus:       configv1alpha1.InterpreterOperationInterpretStatus,
	interpreter.OperationAggregateStatus:     configv1alpha1.InterpreterOperationAggregateStatus,
	interpreter.OperationInterpretHealth:     configv1alpha1.InterpreterOperationInterpretHealth,
	interpreter.OperationInterpretDependency: configv1alpha1.InterpreterOperationInterpretDependency,
}

// ProtocolOperation is the protocol's name of op; false when webhooks are not asked for it
// (componentResource: InterpretComponent is not called yet).
func ProtocolOperation(op interpreter.Operation) (configv1alpha1.InterpreterOperation, bool) {
	p, ok := protocolOps[op]
	return p, ok
}

func knownOperation(op configv1alpha1.InterpreterOperation) bool {
	switch op {
	case configv1alpha1.InterpreterOperationAll, configv1alpha1.InterpreterOperationInterpretReplica,
		configv1alpha1.InterpreterOperationInterpretComponent, configv1alpha1.InterpreterOperationReviseReplica,
		configv1alpha1.InterpreterOperationReviseComponents, configv1alpha1.InterpreterOperationInterpretStatus,
		configv1alpha1.InterpreterOperationPrune, configv1alpha1.InterpreterOperationRetain,
		configv1alpha1.InterpreterOperationAggregateStatus, configv1alpha1.InterpreterOperationInterpretHealth,
		configv1alpha1.InterpreterOperationInterpretDependency:
		return true
	}
	return false
}

// Matches reports whether the hook's rules match the kind and operation.
func (h *Hook) Matches(gvk schema.GroupVersionKind, op configv1alpha1.InterpreterOperation) bool {
	for _, rule := range h.rules {
		if matchOne(rule.Operations, op) && matchAny(rule.APIGroups, gvk.Group) &&
			matchAny(rule.APIVersions, gvk.Version) && matchAny(rule.Kinds, gvk.Kind) {
			return true
		}
	}
	return false
}

func matchOne(ops []configv1alpha1.InterpreterOperation, op configv1alpha1.InterpreterOperation) bool {
	return slices.Contains(ops, configv1alpha1.InterpreterOperationAll) || slices.Contains(ops, op)
}

func matchAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// Lookup returns the webhooks of gvk: for each operation, the first webhook by ID whose rules
// match.
func (r *Registry) Lookup(gvk schema.GroupVersionKind) (interpreter.Customization, bool) {
	idx := r.index.Load()
	if len(idx.hooks) == 0 {
		return nil, false
	}
	if v, ok := idx.kinds.Load(gvk); ok {
		k := v.(*kindHooks)
		return k, k != nil
	}
	k := &kindHooks{gvk: gvk}
	found := false
	h := sha256.New()
	for op, p := range protocolOps {
		for _, hook := range idx.hooks {
			if hook.Matches(gvk, p) {
				k.ops[opIndex(op)] = hook
				found = true
				break
			}
		}
	}
	if !found {
		idx.kinds.Store(gvk, (*kindHooks)(nil))
		return nil, false
	}
	for i, hook := range k.ops {
		if hook != nil {
			fmt.Fprintf(h, "%d\x00%s\x00%s\x00", i, hook.ID(), hook.configHash)
		}
	}
	k.rev = "webhook:" + hex.EncodeToString(h.Sum(nil))[:16]
	idx.kinds.Store(gvk, k)
	return k, true
}

func opIndex(op interpreter.Operation) int { return slices.Index(interpreter.Operations, op) }

// kindHooks are the webhooks of one kind, as Lookup returns them.
type kindHooks struct {
	gvk schema.GroupVersionKind
	rev string
	ops [8]*Hook
}

func (k *kindHooks) hook(op interpreter.Operation) *Hook {
	if i := opIndex(op); i >= 0 && i < len(k.ops) {
		return k.ops[i]
	}
	return nil
}

// Has reports whether a webhook interprets op for the kind.
func (k *kindHooks) Has(op interpreter.Operation) bool { return k.hook(op) != nil }

// Revision changes whenever the webhooks of the kind, or their configurations, do.
func (k *kindHooks) Revision() string { return k.rev }
