//go:build !unix

package ray

import "syscall"

func bridgeProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}
