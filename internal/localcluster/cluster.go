package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

const (
	// DefaultStartTimeout bounds Start when Options.StartTimeout is zero.
	DefaultStartTimeout = 3 * time.Minute

	// ServiceClusterIPRange is the service CIDR of every cluster.
	ServiceClusterIPRange = "10.96.0.0/16"
	// kubernetesServiceIP is the first address of ServiceClusterIPRange, which the
	// apiserver gives to the "kubernetes" Service.
	kubernetesServiceIP = "10.96.0.1"
	// ServiceAccountIssuer is the issuer of service-account tokens.
	ServiceAccountIssuer = "https://kubernetes.default.svc"

	// RESTConfig's client-side rate limits: generous, these apiservers serve tests.
	restQPS   = 200
	restBurst = 400

	// bindAttempts is how often a process that lost a port race is started again.
	bindAttempts = 4
	// pollInterval is how often readiness is checked.
	pollInterval = 100 * time.Millisecond
	// checkTimeout bounds one readiness check.
	checkTimeout = 5 * time.Second
)

// Options configures a cluster. The zero value is a usable apiserver-only cluster in a
// temporary directory.
type Options struct {
	// Name identifies the cluster in directory names, kubeconfig entries and logs. It must be
	// a DNS-1123 label; default "localcluster".
	Name string
	// Dir is the state directory: certificates, tokens, etcd data, logs and the admin
	// kubeconfig. It must not already hold a cluster. Empty: a temporary directory,
	// removed by Stop.
	Dir string
	// BinDir holds the binaries; see ResolveBinDir for the lookup when it is empty.
	BinDir string
	// Full also runs kube-controller-manager, kube-scheduler and kwok with fake Nodes, so
	// that workloads are scheduled and Pods become Ready. Without it the cluster is an API
	// server only: objects are stored and validated but nothing acts on them.
	Full bool
	// ControllerManager runs kube-controller-manager without scheduler or Nodes: garbage
	// collection, namespace deletion and service accounts work, as on a Karmada host.
	// Implied by Full.
	ControllerManager bool
	// Nodes are the fake Nodes of a full cluster; default two of DefaultNodeCapacity.
	Nodes []NodeSpec
	// APIServerPort and EtcdPort fix the loopback ports; 0 picks free ones.
	APIServerPort, EtcdPort int
	// ExtraAPIServerArgs are appended to kube-apiserver's arguments ("--flag=value"); a
	// repeated flag overrides the default.
	ExtraAPIServerArgs []string
	// ExtraControllerManagerArgs are added to kube-controller-manager's arguments
	// ("--flag=value"); a flag given here replaces the default one of that name (for example
	// --controllers, or --use-service-account-credentials=false).
	ExtraControllerManagerArgs []string
	// Detach lets the processes outlive the process that started them (the persistent local
	// fleet). By default the kernel kills them when it dies, so an interrupted test leaks
	// nothing.
	Detach bool
	// StartTimeout bounds Start (and StartAPIServer) on top of the context's deadline;
	// default DefaultStartTimeout.
	StartTimeout time.Duration
	// Log, if set, receives one line per step of starting and stopping.
	Log io.Writer
}

// NodeSpec describes a fake Node of a full cluster.
type NodeSpec struct {
	// Name of the Node; default "<cluster>-node-<n>".
	Name string
	// Capacity is both capacity and allocatable; default DefaultNodeCapacity.
	Capacity corev1.ResourceList
	// Labels are added to the Node's default labels (hostname, os, arch).
	Labels map[string]string
}

// Cluster is a running control plane on 127.0.0.1. Its exported fields are set by Start
// and not changed afterwards; its methods are safe for concurrent use.
type Cluster struct {
	// Name and Dir are the resolved Options.Name and Options.Dir.
	Name, Dir string
	// Endpoint is the apiserver's URL, https://127.0.0.1:<APIServerPort>.
	Endpoint string
	// CAData is the PEM CA that signed the apiserver's serving certificate.
	CAData []byte
	// AdminToken is a bearer token of user AdminUser in group system:masters.
	AdminToken string
	// KubeconfigPath is the admin kubeconfig, in Dir.
	KubeconfigPath string
	// APIServerPort and EtcdPort are the loopback ports in use.
	APIServerPort, EtcdPort int
	// Full reports whether controllers, scheduler and fake nodes run.
	Full bool
	// ControllerManager reports whether kube-controller-manager runs (always when Full).
	ControllerManager bool

	binDir       string
	fixedPorts   bool // ports come from Options and must not change
	startTimeout time.Duration
	etcdPeerPort int
	extraArgs    []string
	extraKCMArgs []string
	detach       bool
	nodes        []NodeSpec
	files        pkiFiles
	metrics      *metricsServer // full clusters: the metrics.k8s.io stand-in (metrics.go)
	removeDir    bool           // Dir is temporary
	log          *logger
	readyzClient *http.Client

	mu      sync.Mutex
	procs   map[string]*process
	stopped bool
}

// ProcessInfo describes a process of a cluster.
type ProcessInfo struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
}

// Start starts a cluster and returns once its apiserver reports ready; for a full cluster,
// once its fake Nodes are Ready and schedulable and the default ServiceAccount exists. If
// it fails, everything it started is stopped and the error quotes the relevant log.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c, err := newCluster(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()

	began := time.Now()
	if err := c.start(ctx); err != nil {
		err = fmt.Errorf("starting cluster %s: %w", c.Name, err)
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", stopErr))
		}
		return nil, err
	}
	c.log.printf("ready at %s in %s", c.Endpoint, time.Since(began).Round(10*time.Millisecond))
	return c, nil
}

// newCluster validates o, prepares the state dir and writes credentials.
func newCluster(o Options) (*Cluster, error) {
	if o.Name == "" {
		o.Name = "localcluster"
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return nil, fmt.Errorf("invalid cluster name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	for _, p := range []int{o.APIServerPort, o.EtcdPort} {
		if p < 0 || p > 65535 {
			return nil, fmt.Errorf("cluster %s: invalid port %d", o.Name, p)
		}
	}
	nodes, err := defaultNodes(o.Name, o.Nodes)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", o.Name, err)
	}
	o.ControllerManager = o.ControllerManager || o.Full
	need := []string{binEtcd, binAPIServer}
	switch {
	case o.Full:
		need = requiredFiles(true)
	case o.ControllerManager:
		need = append(need, binControllerManager)
	}
	binDir, err := resolveBinDir(o.BinDir, need)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", o.Name, err)
	}

	c := &Cluster{
		Name:              o.Name,
		Full:              o.Full,
		ControllerManager: o.ControllerManager,
		binDir:            binDir,
		fixedPorts:        o.APIServerPort != 0 || o.EtcdPort != 0,
		startTimeout:      o.StartTimeout,
		extraArgs:         slices.Clone(o.ExtraAPIServerArgs),
		extraKCMArgs:      slices.Clone(o.ExtraControllerManagerArgs),
		detach:            o.Detach,
		nodes:             nodes,
		log:               newLogger(o.Log, o.Name),
		procs:             map[string]*process{},
	}
	if c.startTimeout <= 0 {
		c.startTimeout = DefaultStartTimeout
	}
	if o.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "flotilla-"+o.Name+"-"); err != nil {
			return nil, err
		}
		c.removeDir = true
	} else {
		if c.Dir, err = filepath.Abs(o.Dir); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(c.Dir, "pki")); err == nil {
			return nil, fmt.Errorf("cluster %s: %s already holds a cluster; stop it and remove the directory first", o.Name, c.Dir)
		}
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return nil, err
		}
	}

	files, creds, err := writePKI(filepath.Join(c.Dir, "pki"), c.Name)
	if err != nil {
		c.cleanupDir()
		return nil, fmt.Errorf("cluster %s: writing credentials: %w", o.Name, err)
	}
	c.files, c.CAData, c.AdminToken = files, creds.caPEM, creds.adminToken
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")

	if c.APIServerPort = o.APIServerPort; c.APIServerPort == 0 {
		if c.APIServerPort, err = ports.pick(); err != nil {
			c.cleanupDir()
			return nil, err
		}
	}
	if c.EtcdPort = o.EtcdPort; c.EtcdPort == 0 {
		if c.EtcdPort, err = ports.pick(); err != nil {
			c.cleanupDir()
			return nil, err
		}
	}
	if c.etcdPeerPort, err = ports.pick(); err != nil {
		c.cleanupDir()
		return nil, err
	}
	c.setEndpoint()
	return c, nil
}

func (c *Cluster) setEndpoint() {
	c.Endpoint = "https://127.0.0.1:" + strconv.Itoa(c.APIServerPort)
}

// start runs the processes in order, waiting for each to be ready.
func (c *Cluster) start(ctx context.Context) error {
	onConflict := repickOnConflict
	if c.fixedPorts {
		onConflict = failOnConflict
	}
	if err := c.run(ctx, c.etcdComponent(), onConflict); err != nil {
		return err
	}
	if c.Full {
		if err := ensureFrontProxy(c.files); err != nil {
			return fmt.Errorf("front-proxy client certificate: %w", err)
		}
	}
	if err := c.run(ctx, c.apiServerComponent(), onConflict); err != nil {
		return err
	}
	if err := os.WriteFile(c.KubeconfigPath, c.Kubeconfig(AdminUser, c.AdminToken), 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	switch {
	case c.Full:
		if err := c.startWorkloadPlane(ctx); err != nil {
			return err
		}
		if c.detach {
			// The stand-in lives in this process, which a detached fleet outlives: an
			// APIService pointing at nothing would break the member's discovery (and with it
			// namespace deletion), so a detached fleet serves no metrics.k8s.io.
			return unregisterMetrics(ctx, c.RESTConfig())
		}
		return c.startMetrics(ctx)
	case c.ControllerManager:
		return c.startControllerManager(ctx)
	}
	return nil
}

// component is a process of the cluster and how to tell that it is ready.
type component struct {
	name  string
	spec  func() procSpec
	ready func(context.Context) error // nil: running is enough
	// repick assigns new ports after a lost port race; nil when the ports are fixed.
	repick func() error
}

// portConflict says what run does when a process exits because its port is taken.
type portConflict int

const (
	failOnConflict   portConflict = iota // ports chosen by the caller: report the clash
	repickOnConflict                     // ports picked here lost a race: pick new ones
	retryOnConflict                      // a restart on the same port: wait for it to be free
)

// run starts comp and waits until it is ready, handling a port clash as onConflict says.
func (c *Cluster) run(ctx context.Context, comp component, onConflict portConflict) error {
	for attempt := 1; ; attempt++ {
		began := time.Now()
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return errors.New("cluster is stopped")
		}
		p, err := startProcess(comp.spec())
		if err == nil {
			c.procs[comp.name] = p
		}
		c.mu.Unlock()
		if err != nil {
			return err
		}
		c.log.printf("%s started (pid %d)", comp.name, p.pid)
		if comp.ready == nil {
			return nil
		}
		err = waitReady(ctx, []*process{p}, comp.ready)
		if err == nil {
			c.log.printf("%s ready in %s", comp.name, time.Since(began).Round(10*time.Millisecond))
			return nil
		}
		if onConflict == failOnConflict || attempt == bindAttempts || !p.exited() || !p.logContains("address already in use") {
			_ = p.stop(0)
			return err
		}
		if onConflict == repickOnConflict && comp.repick != nil {
			if rerr := comp.repick(); rerr != nil {
				return errors.Join(err, rerr)
			}
			c.log.printf("%s lost a port race, retrying on new ports", comp.name)
		} else {
			c.log.printf("%s: port in use, retrying", comp.name)
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Second):
			}
		}
	}
}

// cancelOnExit calls cancel as soon as one of procs exits, until the returned function
// is called: a check must not hang on a port the process no longer serves.
func cancelOnExit(procs []*process, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	for _, p := range procs {
		if !p.owned {
			continue
		}
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-done:
			}
		}()
	}
	return func() { close(done) }
}

// waitReady polls ready until it succeeds, one of procs exits or ctx ends.
func waitReady(ctx context.Context, procs []*process, ready func(context.Context) error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		for _, p := range procs {
			if p.exited() {
				return p.exitError()
			}
		}
		checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
		stopWatching := cancelOnExit(procs, cancel)
		last := ready(checkCtx)
		stopWatching()
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err() // canceled: the caller knows why
			}
			var names []string
			var b strings.Builder
			for _, p := range procs {
				names = append(names, p.name)
				fmt.Fprintf(&b, "\nlast lines of %s:\n%s", p.logPath, p.logTail())
			}
			return fmt.Errorf("%s not ready: %w (last check: %v)%s", strings.Join(names, ", "), ctx.Err(), last, b.String())
		case <-tick.C:
		}
	}
}

func (c *Cluster) binary(name string) string { return filepath.Join(c.binDir, name) }

func (c *Cluster) etcdComponent() component {
	return component{
		name: binEtcd,
		spec: func() procSpec {
			client := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPort)
			peer := "http://127.0.0.1:" + strconv.Itoa(c.etcdPeerPort)
			return procSpec{
				name: binEtcd,
				path: c.binary(binEtcd),
				args: []string{
					"--name=" + c.Name,
					"--data-dir=" + filepath.Join(c.Dir, "etcd"),
					"--listen-client-urls=" + client,
					"--advertise-client-urls=" + client,
					"--listen-peer-urls=" + peer,
					"--initial-advertise-peer-urls=" + peer,
					"--initial-cluster=" + c.Name + "=" + peer,
					"--unsafe-no-fsync",
					"--quota-backend-bytes=" + strconv.Itoa(4<<30),
					"--log-level=warn",
				},
				stateDir: c.Dir,
				detach:   c.detach,
			}
		},
		ready: c.etcdHealthy,
		repick: func() (err error) {
			if c.EtcdPort, err = ports.pick(); err != nil {
				return err
			}
			c.etcdPeerPort, err = ports.pick()
			return err
		},
	}
}

// etcdHealthy asks etcd's /health endpoint.
func (c *Cluster) etcdHealthy(ctx context.Context) error {
	url := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPort) + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("etcd /health: %s %s", resp.Status, body)
	}
	return nil
}

// APIServerArgsEnv names the environment variable whose flags (space-separated) are added,
// last, to every kube-apiserver started here: a debugging aid, for example
// FLOTILLA_APISERVER_ARGS=--profiling=true to take CPU profiles of a bench's host.
const APIServerArgsEnv = "FLOTILLA_APISERVER_ARGS"

func (c *Cluster) apiServerComponent() component {
	return component{
		name: binAPIServer,
		spec: func() procSpec {
			args := []string{
				"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(c.EtcdPort),
				"--bind-address=127.0.0.1",
				"--advertise-address=127.0.0.1",
				// Endpoints may not hold loopback addresses: without this, the apiserver
				// logs a failure to publish its own address every ten seconds.
				"--endpoint-reconciler-type=none",
				"--secure-port=" + strconv.Itoa(c.APIServerPort),
				"--cert-dir=" + filepath.Join(c.Dir, "pki"),
				"--tls-cert-file=" + c.files.ServingCert,
				"--tls-private-key-file=" + c.files.ServingKey,
				"--client-ca-file=" + c.files.CACert,
				"--token-auth-file=" + c.files.Tokens,
				"--authorization-mode=Node,RBAC",
				"--service-cluster-ip-range=" + ServiceClusterIPRange,
				"--service-account-issuer=" + ServiceAccountIssuer,
				"--service-account-key-file=" + c.files.SAPublicKey,
				"--service-account-signing-key-file=" + c.files.SAKey,
				"--allow-privileged=true",
				"--profiling=false",
			}
			if c.Full {
				args = append(args, c.aggregationArgs()...)
			}
			return procSpec{
				name:     binAPIServer,
				path:     c.binary(binAPIServer),
				args:     append(append(args, c.extraArgs...), strings.Fields(os.Getenv(APIServerArgsEnv))...),
				stateDir: c.Dir,
				detach:   c.detach,
			}
		},
		ready: c.apiServerReady,
		repick: func() (err error) {
			c.APIServerPort, err = ports.pick()
			c.setEndpoint()
			return err
		},
	}
}

// apiServerReady asks the apiserver's /readyz endpoint.
func (c *Cluster) apiServerReady(ctx context.Context) error {
	client, err := c.httpClient()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// httpClient returns an authenticated client for the apiserver.
func (c *Cluster) httpClient() (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readyzClient == nil {
		client, err := rest.HTTPClientFor(c.RESTConfig())
		if err != nil {
			return nil, err
		}
		c.readyzClient = client
	}
	return c.readyzClient, nil
}

// RESTConfig returns a new admin client configuration with high client-side rate limits.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Endpoint,
		BearerToken:     c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: slices.Clone(c.CAData)},
		QPS:             restQPS,
		Burst:           restBurst,
	}
}

// Kubeconfig renders a kubeconfig for this cluster that authenticates with token. Its
// cluster and context are named after the cluster and its user "<cluster>-<user>", so
// the kubeconfigs of several clusters merge cleanly (KUBECONFIG=a:b:c).
func (c *Cluster) Kubeconfig(user, token string) []byte {
	userName := c.Name + "-" + user
	cfg := clientcmdv1.Config{
		APIVersion: "v1",
		Kind:       "Config",
		Clusters: []clientcmdv1.NamedCluster{{
			Name:    c.Name,
			Cluster: clientcmdv1.Cluster{Server: c.Endpoint, CertificateAuthorityData: c.CAData},
		}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{
			Name:     userName,
			AuthInfo: clientcmdv1.AuthInfo{Token: token},
		}},
		Contexts: []clientcmdv1.NamedContext{{
			Name:    c.Name,
			Context: clientcmdv1.Context{Cluster: c.Name, AuthInfo: userName},
		}},
		CurrentContext: c.Name,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		// Unreachable: the config holds only strings and byte slices.
		return nil
	}
	return b
}

// Processes lists the cluster's running processes.
func (c *Cluster) Processes() []ProcessInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ProcessInfo
	for _, name := range processOrder {
		if p, ok := c.procs[name]; ok && !p.exited() {
			out = append(out, ProcessInfo{Name: p.name, PID: p.pid, Log: p.logPath})
		}
	}
	return out
}

// processOrder is the start order (stopAll has its own).
var processOrder = []string{binEtcd, binAPIServer, binControllerManager, binScheduler, binKwok}

// expectedProcesses are the names of the processes a healthy cluster runs.
func (c *Cluster) expectedProcesses() []string {
	switch {
	case c.Full:
		return processOrder
	case c.ControllerManager:
		return processOrder[:3]
	}
	return processOrder[:2]
}

// Healthy reports whether all of the cluster's processes run and the apiserver is ready.
func (c *Cluster) Healthy(ctx context.Context) error {
	c.mu.Lock()
	var errs []error
	for _, name := range c.expectedProcesses() {
		if p, ok := c.procs[name]; !ok || p.exited() {
			errs = append(errs, fmt.Errorf("%s is not running", name))
		}
	}
	c.mu.Unlock()
	if err := c.apiServerReady(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return nil
}

// StopAPIServer stops kube-apiserver only; etcd keeps the data and other processes keep
// running (and retrying) until StartAPIServer brings it back.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.procs[binAPIServer]
	c.mu.Unlock()
	if p == nil || p.exited() {
		return nil
	}
	began := time.Now()
	if err := p.stop(stopGrace); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	c.log.printf("%s stopped in %s", binAPIServer, time.Since(began).Round(10*time.Millisecond))
	return nil
}

// KillAPIServer kills kube-apiserver at once (SIGKILL), as a crash or a cut network takes a
// member away: unlike StopAPIServer, there is no graceful shutdown of several seconds during
// which it still answers some requests. StartAPIServer brings it back.
func (c *Cluster) KillAPIServer() error {
	c.mu.Lock()
	p := c.procs[binAPIServer]
	c.mu.Unlock()
	if p == nil || p.exited() {
		return nil
	}
	if err := p.stop(0); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	c.log.printf("%s killed", binAPIServer)
	return nil
}

// StartAPIServer starts kube-apiserver again, on the same port with the same
// certificates and tokens, and waits until it is ready. Clients built before keep working.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p := c.procs[binAPIServer]
	c.mu.Unlock()
	if p != nil && !p.exited() {
		return fmt.Errorf("cluster %s: %s is already running (pid %d)", c.Name, binAPIServer, p.pid)
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	if err := c.run(ctx, c.apiServerComponent(), retryOnConflict); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return nil
}

// Stop stops every process of the cluster (controllers first, then the apiserver, then
// etcd) and waits for them to exit; a temporary Dir is removed. Further calls do nothing. A cluster returned by LoadFleet
// stops the processes recorded for it.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.mu.Unlock()

	began := time.Now()
	c.stopMetrics()
	err := stopAll(slices.Collect(maps.Values(procs)))
	if err == nil {
		c.cleanupDir()
	}
	c.log.printf("stopped in %s", time.Since(began).Round(10*time.Millisecond))
	if err != nil {
		return fmt.Errorf("stopping cluster %s: %w", c.Name, err)
	}
	return nil
}

// cleanupDir removes Dir if it is temporary.
func (c *Cluster) cleanupDir() {
	if c.removeDir {
		_ = os.RemoveAll(c.Dir)
	}
}
