//go:build !linux

package install

import "syscall"

// childProcAttr: only Linux can tie the child's life to the test process.
func childProcAttr() *syscall.SysProcAttr { return nil }
