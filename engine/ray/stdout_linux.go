package ray

import (
	"os"
	"syscall"
)

// protocolStdout moves the protocol to a private duplicate of fd 1 and
// points fd 1 at stderr, so application prints cannot corrupt a frame.
func protocolStdout() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		return os.Stdout
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return os.Stdout
	}
	// Non-blocking, so that the runtime's poller waits for room (rawIO).
	_ = syscall.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), "rayflow-leaf-protocol")
}
