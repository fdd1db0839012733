package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// buildManager builds the manager binary from the repository (or takes make test's: see
// framework.PrebuiltEnv).
func buildManager(ctx context.Context) (string, error) {
	bin, err := framework.BuildManager(ctx)
	if err != nil {
		return "", fmt.Errorf("building the manager: %w", err)
	}
	return bin, nil
}

// buildAgent builds the Pull agent binary (cmd/agent), or takes make test's.
func buildAgent(ctx context.Context) (string, error) {
	bin, err := framework.BuildAgent(ctx)
	if err != nil {
		return "", fmt.Errorf("building the agent: %w", err)
	}
	return bin, nil
}

// managerProc is a binary of the project's running as a process of its own, one incarnation
// at a time: SIGKILLed and started again by the chaos. It is the manager running as its
// ServiceAccount (one of the replicas, when sharded), or the Pull member's agent.
type managerProc struct {
	bin, dir string
	// label names the process in logs and file names: "manager" (unsharded), "manager-a"
	// (a sharded replica), "agent-member2".
	label string
	// args are the process's arguments but for --zap-log-level and --pprof-bind-address.
	args []string

	cmd *exec.Cmd
	// pprof has each incarnation serve /debug/pprof on a free 127.0.0.1 port, pprofAddr (the
	// long soak only: a port picked free may be taken before the manager binds it, and the
	// short soak in make test must not fail on that).
	pprof     bool
	pprofAddr string
	logLevel  string // --zap-log-level when set
	done      chan struct{}
	killed    bool // the exit was ours
	startedAt time.Time
	starts    int
	// killedAt[n] is when incarnation n was SIGKILLed (zero: it was not).
	killedAt map[int]time.Time
	// crashes are exits nobody asked for, with the tail of the log.
	crashes []string
	// lostLeases are the exits on a lost leader election Lease ("leader election lost"): a
	// leader-elected process (the sharded replicas, the agent) exits then by design, and the
	// kubelet restarts it, as the soak does. Not crashes: the agent's member apiserver may be
	// down longer than its renew deadline, and a loaded machine may hold up a renewal.
	lostLeases []string
}

func (m *managerProc) logPath(n int) string {
	return filepath.Join(m.dir, fmt.Sprintf("%s-%02d.log", m.label, n))
}

func (m *managerProc) start() error {
	m.starts++
	logf, err := os.Create(m.logPath(m.starts))
	if err != nil {
		return err
	}
	args := slices.Clone(m.args)
	if m.logLevel != "" {
		args = append(args, "--zap-log-level="+m.logLevel)
	}
	m.pprofAddr = ""
	if m.pprof {
		if m.pprofAddr, err = loopbackAddr(); err != nil {
			logf.Close()
			return err
		}
		args = append(args, "--pprof-bind-address="+m.pprofAddr)
	}
	cmd := exec.Command(m.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	m.cmd, m.done, m.killed, m.startedAt = cmd, make(chan struct{}), false, time.Now()
	done := m.done
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	return nil
}

// loopbackAddr returns a free 127.0.0.1 address.
func loopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// goroutines saves the running incarnation's goroutine stacks beside its log, for the
// post-mortem of a stuck state (what holds a worker), and returns the file's path.
func (m *managerProc) goroutines() (string, error) {
	if !m.running() {
		return "", fmt.Errorf("%s is not running", m.label)
	}
	if m.pprofAddr == "" {
		return "", errors.New("the manager serves no pprof (the long soak's managers do)")
	}
	resp, err := http.Get("http://" + m.pprofAddr + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("goroutine dump: %s", resp.Status)
	}
	path := filepath.Join(m.dir, fmt.Sprintf("%s-%02d-goroutines-%s.txt", m.label, m.starts, time.Now().Format("150405")))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return "", err
	}
	return path, nil
}

// running reports whether the current incarnation runs. An exit that was not ours is
// recorded as a crash.
func (m *managerProc) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		if !m.killed {
			m.killed = true // record once
			if last := tail(m.logPath(m.starts), 3); strings.Contains(last, "leader election lost") {
				m.lostLeases = append(m.lostLeases, fmt.Sprintf("%s incarnation %d", m.label, m.starts))
				return false
			}
			m.crashes = append(m.crashes, fmt.Sprintf("%s incarnation %d exited on its own (%v); log %s:\n%s",
				m.label, m.starts, m.cmd.ProcessState, m.logPath(m.starts), tail(m.logPath(m.starts), 15)))
		}
		return false
	default:
		return true
	}
}

// kill SIGKILLs the manager and waits for it to exit.
func (m *managerProc) kill() {
	if !m.running() {
		return
	}
	m.killed = true
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	if m.killedAt == nil {
		m.killedAt = map[int]time.Time{}
	}
	m.killedAt[m.starts] = time.Now()
}

// stop asks the manager to stop and waits for it.
func (m *managerProc) stop() {
	if !m.running() {
		return
	}
	m.killed = true
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(40 * time.Second):
		_ = m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	}
}

// grepLogs returns up to max lines of every incarnation's log containing one of the needles,
// and how many there are.
func (m *managerProc) grepLogs(max int, needles ...string) ([]string, int) {
	var out []string
	n := 0
	for i := 1; i <= m.starts; i++ {
		f, err := os.Open(m.logPath(i))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			line := s.Text()
			for _, needle := range needles {
				if strings.Contains(line, needle) {
					n++
					if len(out) < max {
						out = append(out, fmt.Sprintf("%s: %s", filepath.Base(m.logPath(i)), truncate(line, 400)))
					}
					break
				}
			}
		}
		f.Close()
	}
	return out, n
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
