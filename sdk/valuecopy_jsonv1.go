//go:build !goexperiment.jsonv2

package sdk

// jsonV2 is true when the program is built with GOEXPERIMENT=jsonv2,
// where encoding/json runs on its version 2 implementation. The copy
// plans follow the version 1 implementation (the default), so they are
// only used with it.
const jsonV2 = false
