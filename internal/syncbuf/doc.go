// Package syncbuf is a bytes.Buffer that goroutines may write and read at
// once: the stderr sink tests give the Ray engine, workers and servers,
// which copy their processes' output into it concurrently.
package syncbuf
