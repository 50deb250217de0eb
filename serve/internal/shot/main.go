// Command shot signs in to a running rayflow serve in headless Chromium
// and saves the README's screenshots: the tasks page, the failures view
// of a failed task's graph and its failed map's items
// (scripts/screenshot.sh runs it against a real run).
//
//	go run ./serve/internal/shot -base http://127.0.0.1:8091 -token-file T -task ID -out docs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rayflow/rayflow/serve/internal/chromium"
)

func main() {
	base := flag.String("base", "", "rayflow serve's URL")
	tokenFile := flag.String("token-file", "", "file holding a bearer token that may read the task")
	task := flag.String("task", "", "a failed task's id")
	out := flag.String("out", "docs", "folder of the screenshots")
	flag.Parse()
	if err := run(*base, *tokenFile, *task, *out); err != nil {
		slog.Error("shot", "err", err)
		os.Exit(1)
	}
}

func run(base, tokenFile, task, out string) error {
	if base == "" || tokenFile == "" || task == "" {
		return errors.New("-base, -token-file and -task are required")
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return fmt.Errorf("reading the token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	path, err := chromium.Path()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rayflow-shot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromium.Options(path, dir, chromedp.Flag("hide-scrollbars", true))...)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/tasks"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("tasks")),
	); err != nil {
		return fmt.Errorf("signing in: %w", err)
	}
	shots := []struct{ name, target, visible string }{
		{"serve-tasks.png", "/tasks", "tasks"},
		{"serve-failures.png", "/tasks/" + task + "/graph?view=failures", "failed-nodes"},
	}
	for _, s := range shots {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+s.target), chromedp.WaitVisible(chromedp.ID(s.visible))); err != nil {
			return fmt.Errorf("%s: %w", s.target, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
		if err != nil {
			return fmt.Errorf("%s: %w", s.target, err)
		}
		f := filepath.Join(out, s.name)
		if err := os.WriteFile(f, png, 0o644); err != nil {
			return err
		}
		fmt.Printf("screenshot: %s (%s, %d bytes)\n", f, s.target, len(png))
	}
	// The failed map's items, through the failures view's link.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#failed-nodes a[aria-label^="Failed items of map"]`)),
		chromedp.WaitVisible(chromedp.ID("map-failed-items"))); err != nil {
		return fmt.Errorf("the failed map's items: %w", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#map-failed-items tr[data-attempt]')].map(r => r.innerText)`))
	if err != nil {
		return err
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	f := filepath.Join(out, "serve-map-items.png")
	if err := os.WriteFile(f, png, 0o644); err != nil {
		return err
	}
	fmt.Printf("screenshot: %s (the failed map's items: %q)\n", f, rows)
	if len(rows) == 0 {
		return errors.New("the failed map's items page lists no item")
	}
	return nil
}
