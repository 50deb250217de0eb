// Package pgtest gives each test its own PostgreSQL database on the
// cluster named by RAYFLOW_TEST_DATABASE_URL (make pg-up writes it to
// .pg-local/url and the Makefile exports it). Under -short, or without the
// variable, the tests that need PostgreSQL skip.
package pgtest
