package install

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// managerProcess is the manager binary running as a child process.
type managerProcess struct {
	cmd     *exec.Cmd
	logPath string
	done    chan error
	once    sync.Once
	waitErr error
}

// buildManager builds the manager from the repository root exactly as `make build` does
// (CGO_ENABLED=0; or takes make test's, built so: framework.PrebuiltEnv) and links it at out.
func buildManager(ctx context.Context, out string) error {
	bin, err := framework.BuildManager(ctx)
	if err != nil {
		return err
	}
	return os.Symlink(bin, out)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startManager runs bin with args and the given kubeconfig, its output going to logPath. On
// Linux the child is killed by the kernel if the test process dies (Pdeathsig): it is started
// from a goroutine that holds its OS thread until the child exits, because Pdeathsig fires
// when the starting thread ends.
func startManager(bin, kubeconfig, logPath string, args ...string) (*managerProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	// Only the kubeconfig: no in-cluster config, no admin credentials from the environment.
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + filepath.Dir(logPath), "PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	p := &managerProcess{cmd: cmd, logPath: logPath, done: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer logFile.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// waitReady polls the manager's /readyz until it answers 200, the process exits or ctx ends.
func (p *managerProcess) waitReady(ctx context.Context, probeAddr string) error {
	url := "http://" + probeAddr + "/readyz"
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("manager exited before it was ready: %v\n%s", err, p.tail(50))
		case <-ctx.Done():
			return fmt.Errorf("manager not ready at %s: %w\n%s", url, ctx.Err(), p.tail(50))
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// running reports whether the manager has not exited.
func (p *managerProcess) running() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, as the kubelet does, and kills the manager if it has not exited after
// its graceful shutdown timeout.
func (p *managerProcess) stop() error {
	p.once.Do(func() {
		if !p.running() {
			p.waitErr = <-p.done
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case p.waitErr = <-p.done:
		case <-time.After(40 * time.Second):
			_ = p.cmd.Process.Kill()
			p.waitErr = errors.Join(errors.New("manager did not stop within 40s of SIGTERM"), <-p.done)
		}
	})
	return p.waitErr
}

// log returns the manager's log so far.
func (p *managerProcess) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// tail returns the last n lines of the log.
func (p *managerProcess) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// forbidden returns the log lines that report a request the apiserver refused for lack of
// permission.
func (p *managerProcess) forbidden() []string {
	var out []string
	s := bufio.NewScanner(bytes.NewReader([]byte(p.log())))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if strings.Contains(strings.ToLower(s.Text()), "forbidden") {
			out = append(out, s.Text())
		}
	}
	return out
}
