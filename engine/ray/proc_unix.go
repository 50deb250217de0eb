//go:build unix

package ray

import "syscall"

// bridgeProcAttr starts the bridge in its own process group.
func bridgeProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group led by pid (the bridge and the
// processes of a private cluster it started). Only a group whose leader
// is pid is signalled.
func killGroup(pid int) {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
