// Command genreserved writes reserved15.go: the code points that are reserved
// (unassigned and not noncharacters) in Unicode 15.0.0, the version that
// canonical JSON v1 pins for NFC.
//
// It reads the tables of Go's unicode package and refuses to run when they are
// not Unicode 15.0.0, so regenerating under a newer toolchain fails loudly
// instead of silently moving the pin.
package main
