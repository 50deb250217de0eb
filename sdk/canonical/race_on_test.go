//go:build race

package canonical

// raceEnabled: the race detector slows parsing ~25 times, so the
// allocation tests use smaller inputs.
const raceEnabled = true
