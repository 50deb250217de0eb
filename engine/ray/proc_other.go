//go:build !unix

package ray

import (
	"os"
	"syscall"
)

func bridgeProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}

func killMentioning(string) {}

func processTree(int) []int { return nil }

func killAll([]int) {}

func pollableStdin() *os.File { return os.Stdin }
