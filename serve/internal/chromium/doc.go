// Package chromium finds the headless Chromium that serve's browser tests
// and the screenshot tool (serve/internal/shot) drive, and gives the
// options both start it with.
package chromium
