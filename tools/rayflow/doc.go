// Command rayflow is the rayflow command-line tool: canonical JSON and
// fingerprints, the conformance suite, and (as later work lands) plans,
// validation, workers and servers.
package main
