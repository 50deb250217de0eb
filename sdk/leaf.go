package sdk

import "context"

// RunBootstrap runs the worker-start hook (RegisterBootstrap) once per
// process; later calls return its first result. Engines that run leaves
// by name in another process (the Ray leaf process) call it before a step
// marked WithBootstrap, since the registered Leaf does not.
func RunBootstrap(ctx context.Context) error { return runBootstrap(ctx) }
