//go:build unix

package ray

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// bridgeProcAttr starts the bridge in its own process group.
func bridgeProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group led by pid (the bridge and the
// processes of a private cluster it started). Only a group whose leader
// is pid is signalled. A process forked while the group is signalled can
// miss the signal (the raylet starting a worker as the cluster is killed:
// seen in CI), so the group is signalled until it is empty, for at most
// about a second.
func killGroup(pid int) {
	pgid, err := syscall.Getpgid(pid)
	if err != nil || pgid != pid {
		return
	}
	for range 50 {
		if syscall.Kill(-pgid, syscall.SIGKILL) != nil || !liveInGroup(pgid) {
			return // ESRCH, or only zombies are left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killAll SIGKILLs pids (errors ignored: some are gone).
func killAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid, pgrp int
	state           string // R, S, D, Z (zombie), X…
	cmdline         []byte // NUL-separated
}

// procs lists this machine's processes from /proc (none where there is
// no /proc). withCmdline also reads each command line.
func procs(withCmdline bool) []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		p := proc{pid: pid, state: f[0]}
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		if withCmdline {
			p.cmdline, _ = os.ReadFile("/proc/" + e.Name() + "/cmdline")
		}
		out = append(out, p)
	}
	return out
}

// killMentioning SIGKILLs this user's processes whose command line holds
// s (a private cluster's session directory, which its processes name until
// a worker retitles itself "ray::…").
func killMentioning(s string) {
	if s == "" {
		return
	}
	self := os.Getpid()
	for _, p := range procs(true) {
		if p.pid != self && bytes.Contains(p.cmdline, []byte(s)) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// processTree lists the processes below pid (children, their children…).
func processTree(pid int) []int {
	children := map[int][]int{}
	for _, p := range procs(false) {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// liveInGroup reports whether a process of group pgid other than a
// zombie exists (false without /proc: the first signal then has to do).
func liveInGroup(pgid int) bool {
	for _, p := range procs(false) {
		if p.pgrp == pgid && p.state != "Z" && p.state != "X" {
			return true
		}
	}
	return false
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
