//go:build unix && !linux

package loadtest

import "syscall"

// childAttr puts a child in its own process group (stop signals the
// group).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
