//go:build rayflow_leaflib && cgo

package ray

// #include <stdlib.h>
import "C"

import (
	"context"
	"runtime/debug"
	"unsafe"

	"github.com/rayflow/rayflow/internal/buildid"
)

// rayflow_leaf_call runs one leaf request frame (PROTOCOL.md, "Leaf
// libraries") and sets *out to its reply frame (malloc'ed; free with
// rayflow_leaf_free, or with the C library's free, which it is: the
// bridge calls free directly, saving a call into Go per leaf).
//
//export rayflow_leaf_call
func rayflow_leaf_call(req *C.char, n C.size_t, out **C.char, outn *C.size_t) C.int {
	serveLeafFrame(context.Background(), unsafe.Slice((*byte)(unsafe.Pointer(req)), int(n)), func(reply []byte) {
		// One cgo call (malloc), no memcpy call: the copy is Go's.
		p := C.malloc(C.size_t(len(reply)))
		copy(unsafe.Slice((*byte)(p), len(reply)), reply)
		*out = (*C.char)(p)
		*outn = C.size_t(len(reply))
	})
	return 0
}

// rayflow_leaf_identity returns the library's code identity, "vcs:<rev>"
// when its build carries the VCS revision of an unmodified checkout, else
// "" (malloc'ed; free with rayflow_leaf_free).
//
//export rayflow_leaf_identity
func rayflow_leaf_identity() *C.char { return C.CString(libraryRevision()) }

// rayflow_leaf_protocol is the leaf protocol version the library speaks
// (the leaf process's handshake carries it).
//
//export rayflow_leaf_protocol
func rayflow_leaf_protocol() C.int { return leafProtocolVersion }

//export rayflow_leaf_free
func rayflow_leaf_free(p *C.char) { C.free(unsafe.Pointer(p)) }

// libraryRevision is this build's VCS identity as a plan's build revision
// spells it, "" without one: a leaf library's identity (the environment's
// revision is the user's claim, not the library's).
func libraryRevision() string {
	bi, _ := debug.ReadBuildInfo()
	return buildid.VCSRevision(bi)
}
