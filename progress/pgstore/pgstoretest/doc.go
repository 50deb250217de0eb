// Package pgstoretest publishes progress for tests through pgstore's own
// sink, the writer a durable run uses: a migrated database of the test's
// own, a RUNNING task, and a Chain of nodes whose publications the test
// builds step by step. pgstore's, serve's and serve/reader's tests share it.
package pgstoretest
