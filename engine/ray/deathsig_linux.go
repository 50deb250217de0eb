package ray

import (
	"os"
	"strconv"
	"syscall"
)

// A leaf process sets its own parent-death signal: its Ray worker starts
// it without a preexec hook, so that Python can spawn it with vfork (a
// fork of a worker's ~150 MB address space costs ~10 ms of CPU, and Ray
// restarts workers often). It runs during package initialization, on the
// main thread, which lives as long as the process (the kernel keeps the
// signal per thread). If the worker died before the signal was set, the
// parent is no longer the one that started the process: exit.
func init() {
	if os.Getenv(leafEnv) != "1" {
		return
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); e != 0 {
		return // the leaf still exits when its input closes
	}
	if want, err := strconv.Atoi(os.Getenv(leafParentEnv)); err == nil && os.Getppid() != want {
		os.Exit(1)
	}
}
