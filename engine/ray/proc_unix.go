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

// killMentioning SIGKILLs this user's processes whose command line holds
// s (a private cluster's session directory, which its processes name until
// a worker retitles itself "ray::…").
func killMentioning(s string) {
	if s == "" {
		return
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if c, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(c, []byte(s)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processTree lists the processes below pid (children, their children…),
// from /proc.
func processTree(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) >= 2 {
				if pp, err := strconv.Atoi(f[1]); err == nil {
					children[pp] = append(children[pp], p)
				}
			}
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// liveInGroup reports whether a process of group pgid other than a
// zombie exists, from /proc (false where there is none: the first signal
// then has to do).
func liveInGroup(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
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
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
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
