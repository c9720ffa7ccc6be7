package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// Deadlines. The machine may run eight test suites at once (load
// average 20+): a condition gets minutes, not seconds; what ends a wait
// early is the condition, never the clock.
const (
	pageTimeout = 3 * time.Minute // one condition of the page
	podTimeout  = 4 * time.Minute // pods started by real kubelets
	pollEvery   = 250 * time.Millisecond
)

// chromiumPath finds Debian's chromium (or $CHROMIUM).
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH: the console's browser tests need a headless Chromium (apt-get install chromium, or bash hack/install-deps.sh)")
}

// browser is one headless Chromium for a test, closed when it ends.
type browser struct {
	t      testing.TB
	ctx    context.Context // the tab
	prefix string          // screenshots' file name prefix
	n      int
}

// newBrowser starts Chromium (skipping the test, or failing it under
// CI=true, when there is none) with one tab of a 1400×1000 window.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		containerdtest.SkipOrFail(t, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
		// Root has no user namespace sandbox here; the page is our own.
		chromedp.NoSandbox,
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); acancel() })
	// The first Run starts the browser, which lives as long as the
	// context of that Run: so ctx itself, not one with a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return &browser{t: t, ctx: ctx, prefix: fileName(t.Name())}
}

// with is b for subtest t (its failures and screenshots are t's).
func (b *browser) with(t testing.TB) *browser {
	return &browser{t: t, ctx: b.ctx, prefix: fileName(t.Name())}
}

// run runs chromedp actions with a deadline (a query waits for its
// element within it).
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.screenshot("failed")
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to url and waits for the page's script to have run.
func (b *browser) open(url string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url))
	b.waitFor("the console's script", `window.__console ? "" : "no window.__console yet"`, pageTimeout)
}

// eval evaluates a JavaScript expression whose value is a string (a
// promise is awaited).
func (b *browser) eval(expr string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
}

// waitFor polls expr, a JavaScript expression that is "" when the page
// is as wanted and otherwise says what it shows instead, until it is ""
// or timeout passes; then the test fails with the last answer and a
// screenshot.
func (b *browser) waitFor(what, expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	last := "not evaluated yet"
	for {
		got, err := b.eval(`(() => { try { return String(` + expr + `); } catch (e) { return "error: " + e; } })()`)
		switch {
		case err == nil && got == "":
			return
		case err != nil:
			last = err.Error()
		default:
			last = got
		}
		if time.Now().After(deadline) {
			b.screenshot("timeout")
			b.t.Fatalf("waiting %v for %s: %s", timeout, what, last)
		}
		select {
		case <-b.ctx.Done():
			b.t.Fatalf("waiting for %s: the browser is gone: %v (last: %s)", what, b.ctx.Err(), last)
		case <-time.After(pollEvery):
		}
	}
}

// value evaluates expr and decodes its JSON value into out, failing the
// test on error.
func (b *browser) value(expr string, out any) {
	b.t.Helper()
	raw, err := b.eval(`JSON.stringify(` + expr + `)`)
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		b.t.Fatalf("evaluating %s: %v (%q)", expr, err, raw)
	}
}

// screenshot saves the window as <artifacts>/<NN>-<name>.png and logs
// its path. Errors are logged, not fatal: a screenshot is evidence.
func (b *browser) screenshot(name string) string {
	b.n++
	dir := artifactDir(b.t)
	path := filepath.Join(dir, fmt.Sprintf("%s-%02d-%s.png", b.prefix, b.n, name))
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// artifactDir is the test's output folder (kept with go test
// -artifacts -outputdir DIR).
func artifactDir(t testing.TB) string {
	return t.(interface{ ArtifactDir() string }).ArtifactDir()
}

// fileName makes a test's name a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// clickChip clicks pod key's chip in the cluster view with the mouse,
// once the view is shown and nothing waits to be drawn, and waits for
// the pod's route. chromedp reads the chip's box and then clicks there:
// a batch drawn in between (a chip's status word growing or shrinking)
// can move the chip from under the click, so a click that opened
// nothing is tried again, at most three times, each logged.
func (b *browser) clickChip(key string) {
	b.t.Helper()
	sel := `#nodes .chip[data-pod=` + jsString(key) + `]`
	for try := 1; ; try++ {
		b.waitFor("the chip of "+key+" shown and the page idle", `(() => {
			if (location.hash !== "#/cluster" || document.querySelector("#view-cluster").hidden) return "route " + location.hash;
			const c = document.querySelector(`+jsString(sel)+`);
			if (!c || c.hidden) return "no chip shown";
			return window.__console.idle() ? "" : "a render is queued";
		})()`, pageTimeout)
		b.run("click the chip of "+key, chromedp.Click(chromedp.CSS(sel)))
		got, err := b.waitRoute("#/pod/"+key, 10*time.Second)
		if err == nil {
			return
		}
		if try == 3 {
			b.screenshot("click-missed")
			b.t.Fatalf("three clicks on the chip of %s opened nothing: %v", key, err)
		}
		b.t.Logf("click %d on the chip of %s opened nothing (route %s); clicking again", try, key, got)
	}
}

// waitRoute waits up to timeout for the page's route to be hash.
func (b *browser) waitRoute(hash string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := b.eval(`location.hash`)
		if err == nil && got == hash {
			return got, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("route %s, want %s", got, hash)
			}
			return got, err
		}
		time.Sleep(pollEvery)
	}
}
