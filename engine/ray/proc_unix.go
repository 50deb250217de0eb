//go:build unix

package ray

import (
	"os"
	"syscall"
)

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

// pollableStdin returns the leaf protocol's input as a non-blocking file,
// read through the runtime's network poller: a goroutine waiting for the
// next request then parks, and an idle leaf process sleeps. Read with a
// blocking system call, the waiting thread keeps the scheduler's monitor
// polling every 20 µs for a while after each request (about 130 µs of CPU
// per request when requests come a few milliseconds apart, as leaves do).
// It falls back to os.Stdin.
func pollableStdin() *os.File {
	fd, err := syscall.Dup(0)
	if err != nil {
		return os.Stdin
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "stdin")
}
