// Package showcase holds rayflow's example flows as a `rayflow serve`
// installation: Register puts them in a durable registry (so a worker runs
// them) and Routes are their enqueue routes for serve.WithEnqueueRoutes.
//
// The `rayflow` CLI installs both; an application that embeds package serve
// gets neither unless it asks, and writes its own serve.EnqueueRoute values
// for its own flows the same way.
package showcase
