// Package raytoken finds the Ray authentication token the way Ray's own
// clients do, for the packages that talk to a Ray cluster (the bridge, the
// Jobs client, tests of the state API). Ray enables token authentication on
// every new cluster once such a token exists.
package raytoken
