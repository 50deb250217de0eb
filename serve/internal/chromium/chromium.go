package chromium

import (
	"errors"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// ErrNotFound is returned by Path when no Chromium is on PATH.
var ErrNotFound = errors.New("no chromium on PATH (make chromium)")

// names are the executables Chromium is installed as (Debian's first).
var names = []string{"chromium", "chromium-browser"}

// Path returns the path of the first Chromium on PATH, or ErrNotFound.
func Path() (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Options are the allocator options of a headless Chromium at path with
// the fresh profile dir and a 1280×900 window, followed by extra.
func Options(path, dir string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	return append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true)}, extra...)
}
