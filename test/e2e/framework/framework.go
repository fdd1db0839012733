// Package framework runs Flotilla end to end on a local fleet: a host (with its own
// kube-controller-manager, as a real host has) and members started by internal/localcluster,
// the manager started in-process with controllers.Setup exactly as main.go does, and
// authenticated as its ServiceAccount with only the generated config/rbac ClusterRole, so a
// missing permission fails the tests.
package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/internal/eventnote"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/manifest"
)

// ManagerServiceAccount is the ServiceAccount the manager runs as, as in config/manager.
const ManagerServiceAccount = "flotilla-manager"

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Env is a running fleet with clients.
type Env struct {
	Fleet   *localcluster.Fleet
	Host    client.Client
	Members map[string]client.Client
}

// StartFleet starts a host with its own controller-manager and the given members, with the
// CRDs installed in the host.
func StartFleet(ctx context.Context, members []localcluster.MemberOptions, log io.Writer) (*Env, error) {
	return StartFleetWith(ctx, localcluster.Options{ControllerManager: true, ExtraControllerManagerArgs: []string{
		"--controllers=" + localcluster.ControllerManagerControllersWithVolumeBinder,
	}}, members, log)
}

// StartFleetWith starts a fleet with the given host options.
func StartFleetWith(ctx context.Context, host localcluster.Options, members []localcluster.MemberOptions, log io.Writer) (*Env, error) {
	f, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir:  filepath.Join(RepoRoot(), "config", "crd", "bases"),
		Host:    host,
		Members: members,
		Log:     log,
	})
	if err != nil {
		return nil, err
	}
	env := &Env{Fleet: f, Members: map[string]client.Client{}}
	s := flotillascheme.New()
	if env.Host, err = client.New(f.Host.RESTConfig(), client.Options{Scheme: s}); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	for _, m := range f.Members {
		c, err := client.New(m.RESTConfig(), client.Options{Scheme: s})
		if err != nil {
			return nil, errors.Join(err, f.Stop())
		}
		env.Members[m.Name] = c
	}
	return env, nil
}

// Join joins a member with internal/join, as `kubectl flotilla join` does: a least-privilege
// ServiceAccount and token in the member, the credentials Secret and the Cluster in the host.
func (e *Env) Join(ctx context.Context, name string) error {
	m := e.Fleet.Member(name)
	if m == nil {
		return fmt.Errorf("no member %q in the fleet", name)
	}
	o := join.Options{Name: name, Host: e.Fleet.Host.RESTConfig(), Member: m.RESTConfig()}
	for i, c := range e.Fleet.Members {
		if c.Name == name {
			mo := e.Fleet.MemberOptions[i]
			o.Provider, o.Region, o.Zone = mo.Provider, mo.Region, mo.Zone
		}
	}
	_, err := join.Join(ctx, o)
	return err
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ManagerKubeconfig writes a kubeconfig for the manager's ServiceAccount (see ManagerConfig)
// into dir and returns its path.
func (e *Env) ManagerKubeconfig(ctx context.Context, dir string) (string, error) {
	cfg, err := e.ManagerConfig(ctx)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "manager.kubeconfig")
	return path, os.WriteFile(path, e.Fleet.Host.Kubeconfig(ManagerServiceAccount, cfg.BearerToken), 0o600)
}

// ManagerConfig installs config/rbac's ClusterRole, a ServiceAccount and a binding in the
// host, and the manager's guard (config/rbac/manager_guard.yaml) as shipped, and returns a
// REST config authenticated as that ServiceAccount.
func (e *Env) ManagerConfig(ctx context.Context) (*rest.Config, error) {
	if err := ensureNamespace(ctx, e.Host, wellknown.SystemNamespace); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return nil, err
	}
	objs := []client.Object{
		role,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: ManagerServiceAccount}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: wellknown.SystemNamespace, Name: ManagerServiceAccount}}},
	}
	guard, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "rbac", "manager_guard.yaml"))
	if err != nil {
		return nil, err
	}
	for _, doc := range strings.Split(string(guard), "\n---\n")[1:] {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("config/rbac/manager_guard.yaml: %w", err)
		}
		objs = append(objs, u)
	}
	for _, o := range objs {
		if err := e.Host.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	kube, err := kubernetes.NewForConfig(e.Fleet.Host.RESTConfig())
	if err != nil {
		return nil, err
	}
	tr, err := kube.CoreV1().ServiceAccounts(wellknown.SystemNamespace).CreateToken(ctx, ManagerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	cfg := e.Fleet.Host.RESTConfig()
	cfg.BearerToken = tr.Status.Token
	cfg.BearerTokenFile = ""
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.Username, cfg.Password = "", ""
	return cfg, nil
}

// Manager is an in-process Flotilla manager.
type Manager struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// StartManager starts a manager against the host with cfg, wired by controllers.Setup.
func StartManager(cfg *rest.Config, opts controllers.Options, leaderElection bool) (*Manager, error) {
	// The host client as main.go makes it: one budget at the default limits, and the
	// manager's user agent (its field manager on the host).
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = ""
	leaderElectionCfg := hostclient.Configure(cfg, hostclient.DefaultQPS, hostclient.DefaultBurst)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  flotillascheme.New(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Tests run a second manager in the same process (leader election hand-over).
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
		HealthProbeBindAddress:        "0",
		LeaderElection:                leaderElection,
		LeaderElectionConfig:          leaderElectionCfg,
		LeaderElectionID:              "flotilla-manager.flotilla.io",
		LeaderElectionNamespace:       wellknown.SystemNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(8 * time.Second),
		RenewDeadline:                 ptr.To(5 * time.Second),
		RetryPeriod:                   ptr.To(time.Second),
	})
	if err != nil {
		return nil, err
	}
	mgr = eventnote.Manager(mgr)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := controllers.Setup(ctx, mgr, opts); err != nil {
		cancel()
		return nil, err
	}
	m := &Manager{cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	return m, nil
}

// Stop stops the manager and waits for it. It may be called more than once.
func (m *Manager) Stop() error {
	m.once.Do(func() {
		m.cancel()
		m.err = <-m.done
	})
	return m.err
}

// Apply creates or updates every object of a multi-document YAML file with server-side
// apply, as `kubectl apply --server-side` would.
func Apply(ctx context.Context, c client.Client, path string) error {
	_, err := manifest.ApplyFile(ctx, c, path, "e2e")
	return err
}
