package sdk

import (
	"reflect"

	"github.com/rayflow/rayflow/internal/errwire"
)

// RegisterErrorType makes leaf errors of type E (usually a pointer to a
// struct with exported fields) come back from a Ray leaf as an E, at their
// position in the error's chain, so that errors.As(err, &target) works on
// the coordinator as it does locally. Call it at package initialization,
// like RegisterFlow. An unregistered error in the chain comes back with
// its message and Go type name (and errors.Is/As look through it).
func RegisterErrorType[E error]() {
	errwire.RegisterType(reflect.TypeFor[E]())
}

// RegisterSentinel makes a sentinel error value (a package-level
// errors.New, for example) come back from a Ray leaf as itself, at its
// position in the error's chain, so that errors.Is(err, sentinel) works on
// the coordinator as it does locally. Call it at package initialization
// (every process of the binary registers the same sentinels): the wire
// name is the calling package, the value's type and its message, so two
// sentinels of one package with the same message cannot both be
// registered (it panics, as it does for a value that is not comparable).
func RegisterSentinel(err error) {
	errwire.RegisterSentinel(err, 1)
}
