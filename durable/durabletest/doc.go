// Package durabletest sets up the durable queue for other packages' tests:
// a migrated database of the test's own (NewDB) and workers that run on
// it until the test ends (StartWorker, with QuickOptions' fast polling).
package durabletest
