// Package testwait lets a test wait for something to happen by polling a
// condition until a deadline, instead of sleeping a guessed time: the test
// goes on as soon as the condition holds, and fails with a message naming
// what it waited for when the deadline passes first.
//
// Use it for waits on things outside the test's control (a PostgreSQL row,
// a Ray job, a span a worker records just after a transition). Code whose
// goroutines all live in the test is better tested in a testing/synctest
// bubble, where synctest.Wait replaces the wait altogether; Poll and Until
// work in a bubble too, on its fake clock.
package testwait
