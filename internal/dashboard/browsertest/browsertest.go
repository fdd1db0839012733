// Package browsertest drives Debian's headless chromium (through chromedp) for the
// dashboard's tests: it finds the browser (skipping, or failing when FLOTILLA_REQUIRE_BROWSER
// is set, when it is absent), starts it with a fresh profile, kills it at the end of the test,
// and keeps a screenshot of the page when the test failed.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// RequireEnv makes a missing chromium a failure instead of a skip (.ci/run sets it).
const RequireEnv = "FLOTILLA_REQUIRE_BROWSER"

// WaitBound bounds each wait for the page to show something: a bound, not an assertion on
// time, so that a failure leaves the browser alive for the screenshot.
const WaitBound = 30 * time.Second

// T is what the helpers need of *testing.T or GinkgoT().
type T interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
}

// Chromium returns the browser's path: /usr/bin/chromium, else chromium on $PATH. Without
// it the test is skipped, or fails when RequireEnv is set.
func Chromium(t T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "chromium not found (/usr/bin/chromium or on $PATH): install it with `apt-get install -y chromium`"
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s; %s is set, so the browser test may not be skipped", msg, RequireEnv)
	}
	t.Skipf("%s, or set %s=1 to make its absence a failure", msg, RequireEnv)
	return ""
}

// Browser is a headless chromium tab.
type Browser struct {
	t   T
	Ctx context.Context
}

// Start starts chromium with a fresh profile under ctx. The test's cleanup takes a
// screenshot if the test failed, then kills the browser and waits for it.
func Start(t T, ctx context.Context) *Browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 900),
	}
	profile := t.TempDir()
	opts = append(opts, chromedp.UserDataDir(profile))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	b := &Browser{t: t, Ctx: bctx}
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot()
		}
		cancelBrowser()
		cancelAlloc() // kills the browser and waits for it
		reap(t, profile)
	})
	return b
}

// reap waits for chromium's helper processes (zygote, renderers), which outlive the browser
// by a moment, to exit; they are found by the test's own profile directory on their command
// line. Any still there after 10 s is killed, by pid.
func reap(t T, profile string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := processesWith("--user-data-dir=" + profile)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("killing chromium processes left after the browser: %v", pids)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith lists the pids whose command line contains arg.
func processesWith(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// Navigate loads url.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("load %s: %v", url, err)
	}
}

// WaitVisible waits, within WaitBound each, until every CSS selector matches a visible
// element.
func (b *Browser) WaitVisible(what string, selectors ...string) {
	b.t.Helper()
	for _, sel := range selectors {
		ctx, cancel := context.WithTimeout(b.Ctx, WaitBound)
		err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
		cancel()
		if err != nil {
			b.t.Fatalf("wait for %s (%s): %v", what, sel, err)
		}
	}
}

// Text is the visible text of the first element the CSS selector matches.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, WaitBound)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// Eval evaluates a JavaScript expression.
func Eval[R any](b *Browser, expr string) R {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, WaitBound)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[R](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Until waits, within WaitBound, until the JavaScript predicate is true.
func (b *Browser) Until(what, predicate string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, WaitBound)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate)); err != nil {
		b.t.Fatalf("wait for %s: %v", what, err)
	}
}

// screenshot keeps the page as it is, in a directory that outlives the test, and logs its
// path.
func (b *Browser) screenshot() {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "flotilla-dashboard-")
	if err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the failing page: %s", path)
}
