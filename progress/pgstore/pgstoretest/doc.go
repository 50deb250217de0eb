// Package pgstoretest publishes progress for tests through pgstore's own
// sink, the writer a durable run uses: a RUNNING task in the test's
// database (internal/pgtest's MigratedPool), and a Chain of nodes whose
// publications the test builds step by step. pgstore's, serve's and serve/reader's tests share it.
package pgstoretest
