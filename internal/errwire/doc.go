// Package errwire carries a Go error across a process boundary (a Ray
// leaf process to the coordinator) with its whole chain: every link's
// message, its Go type name, the value of links whose type is registered
// (RegisterType), and registered sentinel values (RegisterSentinel) by
// name. Decoding rebuilds a chain on which errors.Is and errors.As give
// the same answers as on the original for registered types and sentinels,
// and every link's Error() text is the original's.
//
// It is engine plumbing: applications use sdk.RegisterErrorType and
// sdk.RegisterSentinel.
package errwire
