// Package inproc executes a compiled program (internal/program) in the
// current process with goroutines: the built-in engine sdk.Run reaches
// through sdk.Engine when no other engine is configured, and the reference
// for the Ray engine's semantics. It lives below sdk so that sdk imports
// no engine package; engine/local is its public face, and engine/local's
// package documentation describes what a run guarantees (ordering,
// admission, item batching, progress, the codec round trip and bounded
// cancellation).
package inproc
