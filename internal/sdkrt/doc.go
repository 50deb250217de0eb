// Package sdkrt is the engine side of package sdk: what the engines and
// tools of this module need from sdk and an application author never does
// (the registered leaf, reducer and preview lookups, the worker bootstrap
// runner, a plan's runtime bindings, graph validation, the RunSpec an
// engine receives, encoded results and the hooks behind internal/sdkhost).
//
// sdk fills it in at package initialization: the lookup functions below are
// set by sdk's init, so every program that can have registered steps (it
// imports sdk) finds them set before its own init and main run. Keeping
// this here keeps `go doc ./sdk` an application author's guide while the
// engines (engine/ray, rayjob) reach the same registries.
package sdkrt
