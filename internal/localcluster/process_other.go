//go:build !linux

package localcluster

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere a child that is not
// detached still shares its parent's process group and receives the terminal's signals.
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: detach}
}

func usesPdeathsig(*syscall.SysProcAttr) bool { return false }

func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// cmdlineMentions cannot check the command line without /proc and so trusts the pid file.
func cmdlineMentions(int, string) bool { return true }
