// Package durabletest runs durable workers for other packages' tests: on
// the test's database (internal/pgtest) until the test ends (StartWorker,
// with QuickOptions' fast polling).
package durabletest
