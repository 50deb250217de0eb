//go:build goexperiment.jsonv2

package sdk

// jsonV2: see valuecopy_jsonv1.go. Every round trip goes through the
// codec.
const jsonV2 = true
