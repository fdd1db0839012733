package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Directories inside a cluster's state dir.
const (
	logsDir = "logs" // <proc>.log: stdout and stderr of every process, appended across restarts
	runDir  = "run"  // <proc>.pid: pid of every running process, read by StopProcessesIn
)

const (
	// stopGrace is how long a process gets between SIGTERM and SIGKILL.
	stopGrace = 10 * time.Second
	// tailLines is how much of a log an error message quotes.
	tailLines = 20
)

// procSpec describes a process to start.
type procSpec struct {
	name     string // log and pid file name, e.g. "kube-apiserver"
	path     string // absolute path of the binary
	args     []string
	stateDir string // the cluster's state dir
	detach   bool
}

// process is a child process started by this package, or one started by another process
// and adopted from its pid file (then owned is false and only its pid is known).
type process struct {
	name    string
	pid     int
	logPath string
	pidPath string
	// logStart is the size of the log before this run wrote to it: errors quote only
	// this run's output.
	logStart int64

	owned bool
	// guardDir, for an adopted process, is the state dir its command line must mention
	// for it to be signalled.
	guardDir string
	done     chan struct{} // owned only: closed once the process has exited and been reaped
	err      error         // owned only: the result of Wait, valid once done is closed
}

// startProcess starts spec with output appended to <stateDir>/logs/<name>.log and writes
// its pid to <stateDir>/run/<name>.pid.
func startProcess(spec procSpec) (*process, error) {
	logPath := filepath.Join(spec.stateDir, logsDir, spec.name+".log")
	pidPath := filepath.Join(spec.stateDir, runDir, spec.name+".pid")
	for _, d := range []string{filepath.Dir(logPath), filepath.Dir(pidPath)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", spec.name, err)
	}
	// The child inherits its own descriptor; ours is not needed once it has started.
	defer logFile.Close()

	var logStart int64
	if fi, err := logFile.Stat(); err == nil {
		logStart = fi.Size()
	}
	fmt.Fprintf(logFile, "==== %s starting %s %s\n", time.Now().Format(time.RFC3339), spec.path, strings.Join(spec.args, " "))

	cmd := exec.Command(spec.path, spec.args...)
	cmd.Dir = spec.stateDir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(spec.detach)
	if err := startCmd(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.name, err)
	}

	p := &process{
		name:     spec.name,
		pid:      cmd.Process.Pid,
		logPath:  logPath,
		pidPath:  pidPath,
		logStart: logStart,
		owned:    true,
		done:     make(chan struct{}),
	}
	// Write the pid file before the reaper can remove it.
	pidErr := os.WriteFile(pidPath, []byte(strconv.Itoa(p.pid)+"\n"), 0o644)
	go func() {
		p.err = cmd.Wait()
		p.removePidFile()
		close(p.done)
	}()
	if pidErr != nil {
		_ = p.stop(0)
		return nil, fmt.Errorf("recording pid of %s: %w", spec.name, pidErr)
	}
	return p, nil
}

// startCmd starts cmd. When cmd asks for a parent-death signal, it is started from a
// thread that lives as long as this process: Linux sends that signal when the thread that
// forked the child exits, not the process, and the Go runtime may retire threads.
func startCmd(cmd *exec.Cmd) error {
	if !usesPdeathsig(cmd.SysProcAttr) {
		return cmd.Start()
	}
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go spawnLoop()
	})
	req := spawnRequest{cmd: cmd, result: make(chan error, 1)}
	spawnRequests <- req
	return <-req.result
}

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

// spawnLoop runs forever on one locked OS thread, which therefore never exits.
func spawnLoop() {
	runtime.LockOSThread()
	for req := range spawnRequests {
		req.result <- req.cmd.Start()
	}
}

// exited reports whether the process is known to have exited.
func (p *process) exited() bool {
	if p.owned {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	return !p.adoptedAlive()
}

// adoptedAlive reports whether an adopted process still runs under its pid.
func (p *process) adoptedAlive() bool {
	return pidAlive(p.pid) && cmdlineMentions(p.pid, p.guardDir)
}

// stop sends SIGTERM, then SIGKILL once grace has passed, and returns once the process
// is gone. Stopping an exited process is a no-op.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	p.signal(syscall.SIGTERM)
	if p.waitExit(grace) {
		return nil
	}
	p.signal(syscall.SIGKILL)
	if p.waitExit(stopGrace) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid)
}

// signal sends sig, to an adopted process only while its pid still names it.
func (p *process) signal(sig syscall.Signal) {
	if !p.owned && !cmdlineMentions(p.pid, p.guardDir) {
		return
	}
	_ = syscall.Kill(p.pid, sig)
}

// waitExit waits up to timeout for the process to exit and reports whether it did.
func (p *process) waitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if p.owned {
		select {
		case <-p.done:
			return true
		case <-timer.C:
			return false
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if !p.adoptedAlive() {
			p.removePidFile()
			return true
		}
		select {
		case <-tick.C:
		case <-timer.C:
			return !p.adoptedAlive()
		}
	}
}

// removePidFile removes the pid file if it still names this process (a restarted
// process of the same name may have replaced it).
func (p *process) removePidFile() {
	if pid, err := readPidFile(p.pidPath); err == nil && pid == p.pid {
		_ = os.Remove(p.pidPath)
	}
}

// exitError describes how an owned process exited, with the tail of its log.
func (p *process) exitError() error {
	status := "exited"
	if p.owned && p.err != nil {
		status = p.err.Error()
	}
	return fmt.Errorf("%s exited unexpectedly (%s); last lines of %s:\n%s", p.name, status, p.logPath, p.logTail())
}

// logTail returns the last lines this run of the process wrote.
func (p *process) logTail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const maxBytes = 16 << 10
	start := p.logStart
	if fi, err := f.Stat(); err == nil && fi.Size()-start > maxBytes {
		start = fi.Size() - maxBytes
	}
	b, err := io.ReadAll(io.NewSectionReader(f, start, maxBytes))
	if err != nil {
		return "(unreadable log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// logContains reports whether this run of the process logged s.
func (p *process) logContains(s string) bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, p.logStart, 4<<20))
	return err == nil && bytes.Contains(b, []byte(s))
}

// readPidFile parses a pid file.
func readPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("%s: not a pid: %q", path, b)
	}
	return pid, nil
}

// adoptProcess returns the process recorded in pidPath (<cluster dir>/run/<name>.pid) if
// it is still running and its command line mentions a path under guardDir, which guards
// against a recycled pid.
func adoptProcess(pidPath, guardDir string) (*process, error) {
	pid, err := readPidFile(pidPath)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(pidPath), ".pid")
	clusterDir := filepath.Dir(filepath.Dir(pidPath))
	p := &process{
		name:     name,
		pid:      pid,
		pidPath:  pidPath,
		logPath:  filepath.Join(clusterDir, logsDir, name+".log"),
		guardDir: guardDir,
	}
	if !pidAlive(pid) {
		return nil, fmt.Errorf("%s (pid %d) is not running: %w", name, pid, errNotRunning)
	}
	if !cmdlineMentions(pid, guardDir) {
		return nil, fmt.Errorf("pid %d recorded for %s belongs to another program: %w", pid, name, errNotRunning)
	}
	return p, nil
}

// errNotRunning marks a recorded process that is gone.
var errNotRunning = errors.New("process not running")

// StopProcessesIn stops every process whose pid file lies in dir/run or dir/*/run (a
// cluster's or a fleet's state dir), whether or not this process started it: SIGTERM, then
// SIGKILL after a grace period. A pid is signalled only while its command line mentions
// dir, so a pid the kernel has since given to another program is left alone. Stale pid
// files are removed. It is what `fleet down` uses, and it cleans up after a crashed
// `fleet up`.
func StopProcessesIn(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var pidFiles []string
	for _, pattern := range []string{
		filepath.Join(dir, runDir, "*.pid"),
		filepath.Join(dir, "*", runDir, "*.pid"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		pidFiles = append(pidFiles, m...)
	}

	var (
		procs []*process
		errs  []error
	)
	for _, path := range pidFiles {
		p, err := adoptProcess(path, dir)
		if err != nil {
			if !errors.Is(err, errNotRunning) && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			_ = os.Remove(path)
			continue
		}
		procs = append(procs, p)
	}
	return errors.Join(append(errs, stopAll(procs))...)
}

// stopAll stops procs in dependency order: processes that talk to an apiserver first, in
// parallel, then the apiservers, then etcd, so that no apiserver hangs in its graceful
// shutdown waiting for a vanished etcd.
func stopAll(procs []*process) error {
	tierOf := func(name string) int {
		switch name {
		case binAPIServer:
			return 1
		case binEtcd:
			return 2
		}
		return 0
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	for tier := range 3 {
		var wg sync.WaitGroup
		for _, p := range procs {
			if tierOf(p.name) != tier {
				continue
			}
			wg.Go(func() {
				if err := p.stop(stopGrace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}
