package sdk

import "sync"

// ResetBootstrap forgets the registered bootstrap hook and its one run, as
// a fresh process has neither: a test that registers a hook resets them in
// t.Cleanup, so its next run (-count) runs its own hook again.
func ResetBootstrap() {
	bootstrap.Lock()
	defer bootstrap.Unlock()
	bootstrap.hook = nil
	bootstrap.once = sync.Once{}
	bootstrap.err = nil
}
