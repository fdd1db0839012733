package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// sysProcAttr returns the attributes of a child process. A detached child gets its own
// session, so it survives its parent and the terminal's signals; any other child is
// killed by the kernel when the thread that started it dies (see startCmd).
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func usesPdeathsig(a *syscall.SysProcAttr) bool { return a != nil && a.Pdeathsig != 0 }

// pidAlive reports whether pid names a process that has not exited; a zombie (exited,
// not yet reaped by its parent) counts as exited.
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself hold spaces.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// cmdlineMentions reports whether one of pid's arguments holds a path under dir.
func cmdlineMentions(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	under := []byte(filepath.Clean(dir) + string(filepath.Separator))
	for _, arg := range bytes.Split(b, []byte{0}) {
		if bytes.Contains(arg, under) {
			return true
		}
	}
	return false
}
