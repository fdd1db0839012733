package install

import "syscall"

// childProcAttr makes the kernel kill the manager if the test process dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
