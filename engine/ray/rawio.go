package ray

import (
	"io"
	"syscall"
)

// pipeFile is an *os.File (or a type embedding one, as os/exec's stdin
// pipe does) that rawIO can wrap.
type pipeFile interface {
	io.ReadWriter
	SyscallConn() (syscall.RawConn, error)
}
