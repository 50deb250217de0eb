//go:build !linux

package ray

import "io"

// rawIO is the file itself outside Linux.
func rawIO(f pipeFile) io.ReadWriter { return f }
