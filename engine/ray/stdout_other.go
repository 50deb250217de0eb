//go:build !linux

package ray

import "os"

func protocolStdout() *os.File { return os.Stdout }
