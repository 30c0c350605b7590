package loadtest

import "syscall"

// childAttr puts a child in its own process group (stop signals the
// group) and has the kernel kill it if this process dies without
// stopping it (for example on SIGKILL).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
