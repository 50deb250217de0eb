package ray

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a non-blocking pipe with raw system calls,
// waiting for it in the runtime's poller. A leaf process idles between
// requests, and every ordinary system call made while all of its Ps are
// idle wakes the runtime's monitor thread, which then sleeps and polls a
// few times before it sleeps deeply again: several extra context switches
// per request, most of a no-op leaf's CPU (perf: ~2.5 monitor switches and
// 3.5 system calls per request). A raw read or write does not enter the
// scheduler's syscall state, so the monitor sleeps on; neither blocks,
// because the descriptor is non-blocking and the poller does the waiting.
// A file that is not in the poller (a blocking descriptor) is returned as
// it is. The leaf process's protocol pipes and the coordinator's pipes to
// the bridge use it.
func rawIO(f pipeFile) io.ReadWriter {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	var nonblock bool
	if err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	}); err != nil || !nonblock {
		return f
	}
	return &rawFile{f: f, rc: rc}
}

type rawFile struct {
	f  pipeFile // kept so that the descriptor stays open
	rc syscall.RawConn
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(m), e
			return e != syscall.EAGAIN
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: "pipe", Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawFile) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the poller waits until the pipe has room
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = &os.PathError{Op: "write", Path: "pipe", Err: errno}
	}
	return n, err
}
