package details_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// chromiumPath finds the browser: LENSGATE_TEST_CHROMIUM, else Debian's chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("LENSGATE_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts one headless Chromium for the test. The flags keep it off the network
// (no background updates, sync or QUIC probes, which hang on a closed network) and let it run
// as root in a container.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no Chromium found (apt-get install chromium, or set LENSGATE_TEST_CHROMIUM); .ci/run installs it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	// The first run starts the browser; its context must not carry a timeout.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return bctx
}

// tab opens a fresh browser context (its own cookies) for one reader.
func tab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// within runs steps with a bound, so a broken page fails the test instead of hanging it.
func within(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// artifactDir is where screenshots go: LENSGATE_TEST_ARTIFACTS when set (kept), else the
// test's temporary directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("LENSGATE_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// browserLogin opens the page, follows the login redirect to the fake GitHub's sign-in form,
// signs in as login and lands back on the page.
func browserLogin(t *testing.T, ctx context.Context, page, login string) {
	t.Helper()
	within(t, ctx, "login as "+login,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), login),
		chromedp.Click(chromedp.ID("authorize")),
	)
	waitJS(t, ctx, "the page after login as "+login, `location.pathname.startsWith("/details/") && document.readyState === "complete" ? "yes" : ""`)
}

// waitJS evaluates expr until it gives a non-empty string, across navigations (an evaluation
// that meets a navigation fails and is tried again).
func waitJS(t *testing.T, ctx context.Context, what, expr string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
		cancel()
		if err == nil && v != "" {
			return v
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: %v", what, last)
	return ""
}

// browserResult waits for the in-browser verification to finish and returns its state.
func browserResult(t *testing.T, ctx context.Context) string {
	t.Helper()
	return waitJS(t, ctx, "the in-browser verification", `(() => { const b = document.getElementById("browser-verify"); const s = b && b.dataset.state; return s === "ok" || s === "fail" || s === "unsupported" ? s : "" })()`)
}

func markup(field string) string {
	return `<img src=x id="pwn-` + field + `" onerror="window.pwned='` + field + `'"><script id="pwn-s-` + field + `">window.pwned='` + field + `'</script>`
}

func TestBrowser(t *testing.T) {
	browser := newBrowser(t)
	dir := artifactDir(t)
	title := "Update the README " + markup("pr-title")
	o := stackOptions{reviewer: plantedReviewer{markup: markup}, title: title}
	st := newStack(t, o)
	st.review(o)
	page := st.pageURL("")

	wtab := tab(t, browser)
	browserLogin(t, wtab, page, writer)

	t.Run("lens table", func(t *testing.T) {
		rows := eval[[][]string](t, wtab, `[...document.querySelectorAll("#lenses tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`)
		if len(rows) != 3 {
			t.Fatalf("lens rows %v, want security, correctness and tests", rows)
		}
		want := map[string][]string{
			"security":    {"security", "required", "passed", "builtin", "model-security", "1234 (1200 in, 34 out)", "1", "1.5s"},
			"correctness": {"correctness", "required", "passed", "builtin", "model-correctness", "no model call", "0", "1.5s"},
			"tests":       {"tests", "advisory", "pending", "builtin", "model-tests", "no model call", "0", "1.5s"},
		}
		for _, r := range rows {
			w, ok := want[r[0]]
			if !ok {
				t.Fatalf("unexpected lens row %v", r)
			}
			for i := range w {
				if r[i] != w[i] {
					t.Fatalf("lens %s column %d: %q, want %q (row %v)", r[0], i, r[i], w[i], r)
				}
			}
		}
	})

	t.Run("verified in the browser", func(t *testing.T) {
		if s := browserResult(t, wtab); s != "ok" {
			t.Fatalf("in-browser verification: %s; lines: %v", s, eval[[]string](t, wtab, `[...document.querySelectorAll("#browser-lines li")].map(l => l.textContent)`))
		}
		lines := eval[[]string](t, wtab, `[...document.querySelectorAll("#browser-lines li")].map(l => l.textContent)`)
		joined := strings.Join(lines, "\n")
		for _, w := range []string{"signature checked by your browser: valid", "Payload digest computed by your browser", "the same as this page shows"} {
			if !strings.Contains(joined, w) {
				t.Fatalf("browser lines lack %q:\n%s", w, joined)
			}
		}
		if got := eval[string](t, wtab, `document.getElementById("server-result").textContent`); !strings.Contains(got, "says ok") {
			t.Fatalf("server verification: %q", got)
		}
		headings := eval[string](t, wtab, `document.getElementById("server-h").textContent + " / " + document.getElementById("browser-h").textContent`)
		if headings != "Verified by the lensgate server / Verified by your browser" {
			t.Fatalf("the page does not say plainly who computed what: %q", headings)
		}
		screenshot(t, wtab, dir, "verified.png")
	})

	t.Run("untrusted fields are escaped", func(t *testing.T) {
		if n := eval[int](t, wtab, `document.querySelectorAll('[id^="pwn-"]').length`); n != 0 {
			t.Fatalf("%d planted elements became part of the DOM", n)
		}
		if v := eval[bool](t, wtab, `window.pwned === undefined`); !v {
			t.Fatal("a planted script ran")
		}
		if n := eval[int](t, wtab, `[...document.scripts].filter(s => !s.src).length`); n != 0 {
			t.Fatalf("%d inline scripts in the page", n)
		}
		fields := map[string]string{
			"pr-title":            "#pr-title",
			"title":               "#findings",
			"body":                "#findings",
			"path":                "#findings",
			"summary-security":    "#lenses",
			"summary-tests":       "#lenses",
			"cause":               "#lenses",
			"summary-correctness": "#lenses",
			"gap-path":            "#gaps",
			"gap-reason":          "#gaps",
			"gate-reason":         "#gate-reason",
		}
		for field, sel := range fields {
			text := eval[string](t, wtab, `document.querySelector(`+jsString(sel)+`).textContent`)
			if !strings.Contains(text, markup(field)) {
				t.Errorf("%s: the planted markup is not shown as text in %s: %q", field, sel, text)
			}
		}
	})

	t.Run("accessibility basics", func(t *testing.T) {
		levels := eval[[]int](t, wtab, `[...document.querySelectorAll("h1,h2,h3,h4,h5,h6")].map(h => +h.tagName[1])`)
		if len(levels) == 0 || levels[0] != 1 {
			t.Fatalf("headings %v: the first must be h1", levels)
		}
		for i := 1; i < len(levels); i++ {
			if levels[i] == 1 || levels[i] > levels[i-1]+1 {
				t.Fatalf("headings %v skip a level or repeat h1 at %d", levels, i)
			}
		}
		bad := eval[[]string](t, wtab, `[...document.querySelectorAll("table")].filter(t => !t.querySelector("thead th[scope=col]") || !t.caption).map(t => t.id)`)
		if len(bad) != 0 {
			t.Fatalf("tables without column headers or caption: %v", bad)
		}
		// A status is a word (and a symbol), never only a colour.
		mute := eval[[]string](t, wtab, `[...document.querySelectorAll(".badge")].filter(b => !/[a-z]/i.test(b.textContent) && !b.parentElement.textContent.replace(b.textContent, "").match(/[a-z]/i)).map(b => b.outerHTML)`)
		if len(mute) != 0 {
			t.Fatalf("status shown without a word: %v", mute)
		}
		if lang := eval[string](t, wtab, `document.documentElement.lang`); lang != "en" {
			t.Fatalf("lang %q", lang)
		}
	})

	t.Run("works without JavaScript", func(t *testing.T) {
		nojs := tab(t, browser)
		browserLogin(t, nojs, page, reader)
		c, cancel := context.WithTimeout(nojs, 30*time.Second)
		defer cancel()
		err := chromedp.Do(c, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return chromedp.Void{}, err
		}, chromedp.Navigate(page), chromedp.WaitReady(chromedp.ID("lenses")))
		if err != nil {
			t.Fatal(err)
		}
		if n := eval[int](t, nojs, `document.querySelectorAll("#lenses tbody tr").length`); n != 3 {
			t.Fatalf("%d lens rows without JavaScript", n)
		}
		if st := eval[string](t, nojs, `document.getElementById("browser-verify").dataset.state`); st != "idle" {
			t.Fatalf("the in-browser check ran with scripts off: %s", st)
		}
		for _, id := range []string{"server-result", "download", "findings", "history", "audit"} {
			if !eval[bool](t, nojs, `document.getElementById(`+jsString(id)+`) !== null`) {
				t.Fatalf("#%s missing without JavaScript", id)
			}
		}
		screenshot(t, nojs, dir, "no-javascript.png")
	})

	t.Run("tampered receipt fails in the browser", func(t *testing.T) {
		cr := st.gateRun(fixtureHead)
		if !st.gh.EditCheckRunText(fixtureRepo, cr.ID, tamperPayload(t)) {
			t.Fatal("check run not found")
		}
		within(t, wtab, "reload", chromedp.Navigate(page), chromedp.WaitReady(chromedp.CSS("main h1")))
		if s := browserResult(t, wtab); s != "fail" {
			t.Fatalf("in-browser verification of a tampered receipt: %s", s)
		}
		lines := strings.Join(eval[[]string](t, wtab, `[...document.querySelectorAll("#browser-lines li")].map(l => l.textContent)`), "\n")
		if !strings.Contains(lines, "NOT valid") {
			t.Fatalf("browser lines do not name the bad signature:\n%s", lines)
		}
		if got := eval[string](t, wtab, `document.getElementById("server-result").textContent`); !strings.Contains(got, "not ok") {
			t.Fatalf("server verification of a tampered receipt: %q", got)
		}
		// A receipt that does not verify is said first, and its section opens by itself.
		if got := eval[string](t, wtab, `document.getElementById("first-step").textContent`); !strings.Contains(got, "does not verify") {
			t.Fatalf("first step of a page whose receipt fails: %q", got)
		}
		if !eval[bool](t, wtab, `document.getElementById("receipt-h").closest("details").open`) {
			t.Fatal("the failing verification is folded away")
		}
		screenshot(t, wtab, dir, "tampered.png")
	})

	t.Run("no access is a vague 404", func(t *testing.T) {
		other := tab(t, browser)
		browserLogin(t, other, page, stranger)
		c, cancel := context.WithTimeout(other, 30*time.Second)
		defer cancel()
		resp, err := chromedp.RunResponse(c, chromedp.Navigate(page))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 404 {
			t.Fatalf("status %d, want 404", resp.Status)
		}
		if h := eval[string](t, other, `document.querySelector("h1").textContent`); h != "Not found" {
			t.Fatalf("heading %q", h)
		}
		if body := eval[string](t, other, `document.body.textContent`); strings.Contains(body, "Hello-World") {
			t.Fatal("the 404 page names the repository")
		}
		screenshot(t, other, dir, "no-access.png")
	})
}

// TestBrowserObservation: with a witness key the real pipeline's observation is published
// beside the receipt; the page verifies both, on the server and in the browser.
func TestBrowserObservation(t *testing.T) {
	browser := newBrowser(t)
	dir := artifactDir(t)
	o := stackOptions{witness: true, reviewer: review.NewPipeline(review.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Logger: zerolog.Nop(), WorkRoot: t.TempDir(),
	})}
	st := newStack(t, o)
	st.review(o)
	ctx := tab(t, browser)
	browserLogin(t, ctx, st.pageURL(""), reader)
	if s := browserResult(t, ctx); s != "ok" {
		t.Fatalf("receipt in the browser: %s", s)
	}
	state := waitJS(t, ctx, "the observation's in-browser verification", `(() => { const b = document.getElementById("observation-verify"); const s = b && b.dataset.state; return s === "ok" || s === "fail" || s === "unsupported" ? s : "" })()`)
	if state != "ok" {
		t.Fatalf("observation in the browser: %s; %v", state, eval[[]string](t, ctx, `[...document.querySelectorAll("#observation-lines li")].map(l => l.textContent)`))
	}
	lines := strings.Join(eval[[]string](t, ctx, `[...document.querySelectorAll("#observation-lines li")].map(l => l.textContent)`), "\n")
	if !strings.Contains(lines, "published witness key") {
		t.Fatalf("observation lines:\n%s", lines)
	}
	if got := eval[string](t, ctx, `document.getElementById("observation-server-result").textContent`); !strings.Contains(got, "match") || strings.Contains(got, "mismatch") {
		t.Fatalf("server verification of the observation: %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#observation-calls tbody tr").length`); n == 0 {
		t.Fatal("no observed runtime call listed")
	}
	screenshot(t, ctx, dir, "observation.png")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tamperPayload changes one byte of the signed payload inside the check run's receipt: one
// base64 character of the payload is replaced, so the envelope still parses and only the
// signature (and the payload digest) tell.
func tamperPayload(t *testing.T) func(string) string {
	return func(text string) string {
		i := strings.Index(text, `"payload": "`)
		if i < 0 {
			t.Fatal("no payload in the check run text")
		}
		j := i + len(`"payload": "`) + 40
		raw := []byte(text)
		orig := raw[j]
		raw[j] = 'A'
		if orig == 'A' {
			raw[j] = 'B'
		}
		if _, err := base64.StdEncoding.DecodeString(payloadOf(string(raw))); err != nil {
			t.Fatalf("the tampered payload is no longer base64: %v", err)
		}
		return string(raw)
	}
}

func payloadOf(text string) string {
	i := strings.Index(text, `"payload": "`) + len(`"payload": "`)
	j := strings.Index(text[i:], `"`)
	return text[i : i+j]
}
