package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/register"
)

// Register registers a member in Pull mode as `kubectl flotilla token create NAME` in the
// host and `kubectl flotilla register --no-deployment` in the member do: the host gets no
// credentials for the member. Then, as the host's administrator, it sets where the member
// runs (a bootstrap token may not). Run the agent with StartAgent.
func (e *Env) Register(ctx context.Context, name string) (*register.Result, error) {
	m := e.Fleet.Member(name)
	if m == nil {
		return nil, fmt.Errorf("no member %q in the fleet", name)
	}
	host := e.Fleet.Host.RESTConfig()
	t, err := register.CreateToken(ctx, host, name, register.MinTokenTTL)
	if err != nil {
		return nil, err
	}
	res, err := register.Register(ctx, register.Options{Name: name, Host: t.Server, Token: t.Token, CA: t.CA, Member: m.RESTConfig(), NoDeployment: true})
	if err != nil {
		return nil, err
	}
	for i, c := range e.Fleet.Members {
		if mo := e.Fleet.MemberOptions[i]; c.Name == name && (mo.Provider != "" || mo.Region != "" || mo.Zone != "") {
			spec := map[string]any{"provider": mo.Provider, "region": mo.Region}
			if mo.Zone != "" {
				spec["zones"] = []string{mo.Zone}
			}
			patch, err := json.Marshal(map[string]any{"spec": spec})
			if err != nil {
				return nil, err
			}
			if err := e.Host.Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return nil, fmt.Errorf("set where Pull member %s runs: %w", name, err)
			}
		}
	}
	return res, nil
}

// AgentKubeconfig writes, into dir, a kubeconfig of the member as the agent's ServiceAccount
// flotilla-system/flotilla-agent (the rights register gave it), and returns its path.
func (e *Env) AgentKubeconfig(ctx context.Context, name, dir string) (string, error) {
	m := e.Fleet.Member(name)
	if m == nil {
		return "", fmt.Errorf("no member %q in the fleet", name)
	}
	kube, err := kubernetes.NewForConfig(m.RESTConfig())
	if err != nil {
		return "", err
	}
	tr, err := kube.CoreV1().ServiceAccounts(agentauth.SystemNamespace).CreateToken(ctx, agentauth.AgentServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"-agent.kubeconfig")
	return path, os.WriteFile(path, m.Kubeconfig(agentauth.AgentServiceAccount, tr.Status.Token), 0o600)
}

var agentBuild binaryBuild

// BuildAgent builds cmd/agent once per test process and returns the binary's path.
func BuildAgent(ctx context.Context) (string, error) {
	return agentBuild.build(ctx, "agent", "./cmd/agent")
}

// Agent is a Pull agent running as a process of its own.
type Agent = Process

// Process is a binary of the project's (an agent, a manager) running as a process of its
// own, killed with the test process (Pdeathsig).
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// StartAgent starts the agent of a registered member (see Register) with the member
// kubeconfig at kubeconfig, its metrics and probes off, and these extra flags.
func StartAgent(ctx context.Context, kubeconfig string, log io.Writer, args ...string) (*Agent, error) {
	bin, err := BuildAgent(ctx)
	if err != nil {
		return nil, err
	}
	return startProcess(bin, log, append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
}

func startProcess(bin string, log io.Writer, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &Process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(a.done) }()
	return a, nil
}

// Kill SIGKILLs the agent and waits for it to exit.
func (a *Process) Kill() {
	a.once.Do(func() {
		_ = a.cmd.Process.Kill()
		<-a.done
	})
}

// Stop stops the agent with SIGTERM (it releases its leader Lease), killing it after 10 s.
func (a *Process) Stop() {
	a.once.Do(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	})
}

// RSS returns the agent's resident set size and its peak, in KiB, from /proc.
func (a *Process) RSS() (current, peak int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		var v int
		if n, _ := fmt.Sscanf(line, "VmRSS: %d kB", &v); n == 1 {
			current = v
		}
		if n, _ := fmt.Sscanf(line, "VmHWM: %d kB", &v); n == 1 {
			peak = v
		}
	}
	return current, peak
}
