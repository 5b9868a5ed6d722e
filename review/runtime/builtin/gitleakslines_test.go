package builtin

import (
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// TestLineBoundRules shows which rules scan only their keyword lines: gitleaks' costly generic
// rule must be one of them for the split to pay.
func TestLineBoundRules(t *testing.T) {
	rules := mustRules(t)
	var bound []string
	for id, r := range rules.cfg.Rules {
		if _, ok := lineBound(r); ok {
			bound = append(bound, id)
		}
	}
	t.Logf("%d of %d rules line-bound", len(bound), len(rules.cfg.Rules))
	for _, id := range []string{"generic-api-key", "jwt", "vault-service-token", "aws-access-token", "github-app-token"} {
		if !slices.Contains(bound, id) {
			t.Errorf("%s is not line-bound", id)
		}
	}
	for _, id := range []string{"private-key", "kubernetes-secret-yaml", "credential-assignment"} {
		if slices.Contains(bound, id) {
			t.Errorf("%s is line-bound", id)
		}
	}
	if len(rules.stop[gitleaksGenericRule]) != 1 {
		t.Errorf("generic-api-key's stop words are not taken out of its allowlists: %v", rules.stop)
	}
	if len(rules.split.bound) != len(windowed) {
		t.Errorf("%d rules scan windows, want %d", len(rules.split.bound), len(windowed))
	}
}

func mustRules(t testing.TB) *SecretRules {
	t.Helper()
	rules, err := LoadSecretRules()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// reference is gitleaks' own detection over the whole text, what the split detection must
// equal: the whole rule set, and generic-api-key alone.
type reference struct{ all, generic *detect.Detector }

func wholeDetector(t testing.TB) reference {
	t.Helper()
	cfg, err := gitleaksConfig(lensgateRules)
	if err != nil {
		t.Fatal(err)
	}
	return referenceOf(cfg)
}

// referenceOf is the reference for the compiled rule set cfg.
func referenceOf(cfg gitleaks.Config) reference {
	r := cfg.Rules[gitleaksGenericRule]
	kw := map[string]struct{}{}
	for _, k := range r.Keywords {
		kw[k] = struct{}{}
	}
	ref := reference{detect.NewDetector(cfg), detect.NewDetector(gitleaks.Config{
		Rules: map[string]gitleaks.Rule{r.RuleID: r}, Keywords: kw, OrderedRules: []string{r.RuleID},
		Allowlists: cfg.Allowlists,
	})}
	ref.all.MaxDecodeDepth, ref.generic.MaxDecodeDepth = 0, 0
	return ref
}

func findingStrings[F any](fs []F) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%+v", f)
	}
	return out
}

func checkSame(t *testing.T, ref reference, s *SecretRules, path, text string) {
	t.Helper()
	fragment := detect.Fragment{Raw: text, FilePath: path}
	found, generic := s.split.detect(fragment)
	for _, c := range []struct {
		what      string
		want, got []report.Finding
	}{
		{"rule set", ref.all.Detect(fragment), found},
		{gitleaksGenericRule, ref.generic.Detect(fragment), generic},
	} {
		want, got := findingStrings(sortGitleaks(c.want)), findingStrings(sortGitleaks(c.got))
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("split detection (%s) differs for %q:\nwant %d %v\ngot  %d %v", c.what, text, len(want), want, len(got), got)
		}
	}
}

// trickyLines are lines where a window could differ from the whole text: a generic match over
// several lines, carriage returns, the allow comment, non-ASCII case folding, lines that only
// name a keyword.
var trickyLines = []string{
	"API_KEY=", "OTHER_KEY=", "password =", "", "token = \\", "  ,", "\"", "secret:", "key = 'Zx81kQm02LpWvB7rT4cNq';", "  \"x9f8Kq2LmZ0pW7rT4vB1nC6\"", "token:\r",
	"secret = \"Zx81kQm02LpWvB7rT4cN\" # gitleaks:allow", "ſecret = \"Zx81kQm02LpWvB7rT4cN\"",
	"\u212aEY=\"Zx81kQm02LpWvB7rT4cN\"", "auth", "=", "\t'Zx81kQm02LpWvB7rT4cNq'\r", "key: |",
	"s.abcdefghijklmnopqrstuvwx", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3ZhbHVl",
	"db_password=\\nZx81kQm02LpWvB7rT4cN", "AKIAIOSFODNN7EXAMPLE", "AKIAZ2XQ7PLM4KD6W3RT\r",
	"RUN --mount=type=secret,id=npm cat", "# gitleaks:allow", "import { authKey } from 'auth'",
	"LICENSE = \"MIT\"", "LIC_FILES_CHKSUM = \"file://COPYING;md5=Zx81kQm02LpWvB7rT4cN\"",
	"apikey\x00=\x00Zx81kQm02LpWvB7rT4cN", "api_key = \"Zx81kQmEXAMPLE02LpWvB7\"", "auth_token: Zx81kQm02LpWv.youtube.B7rT4", "ACCESS_TOKEN = \"\xff\xfeZx81kQm02LpWvB7rT4cN\"",
}

// repoLines are the lines of this repository's Go files, realistic text full of "key" and
// "token" without secrets.
func repoLines(t testing.TB) []string {
	t.Helper()
	var lines []string
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" || len(lines) > 40000 {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines = append(lines, strings.Split(string(data), "\n")...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestSplitDetectionMatchesGitleaks compares, on texts of this repository's lines mixed with
// planted credentials and tricky lines, the split detection with gitleaks' Detect of the whole
// text, finding for finding and field for field.
func TestSplitDetectionMatchesGitleaks(t *testing.T) {
	rules := mustRules(t)
	ref := wholeDetector(t)
	code := repoLines(t)
	var planted []string
	for _, text := range plantedFiles(t) {
		planted = append(planted, strings.Split(text, "\n")...)
	}
	paths := []string{"", "main.go", "config/app.env", "vendor/x/y.go", "go.sum", "testdata/keys.txt", "meta/recipe.bb"}
	r := mrand.New(mrand.NewPCG(26, 2))
	for i := range 1000 {
		n := 1 + r.IntN(80)
		lines := make([]string, n)
		for j := range lines {
			switch k := r.IntN(10); {
			case k < 6:
				lines[j] = code[r.IntN(len(code))]
			case k < 8:
				lines[j] = planted[r.IntN(len(planted))]
			case k < 9:
				lines[j] = trickyLines[r.IntN(len(trickyLines))]
			default:
				lines[j] = gateLines[r.IntN(len(gateLines))]
			}
			if r.IntN(8) == 0 {
				lines[j] = strings.ToUpper(lines[j])
			}
		}
		text := strings.Join(lines, "\n")
		if i%3 == 0 {
			text += "\n"
		}
		checkSame(t, ref, rules, paths[i%len(paths)], text)
	}
	for _, a := range trickyLines {
		for _, b := range trickyLines {
			checkSame(t, ref, rules, "meta/recipe.bb", a+"\nx\n"+b)
			checkSame(t, ref, rules, "a.go", "x\n"+a+"\n"+b+"\n\n"+a+"\n"+b)
		}
	}
	for _, a := range gateLines {
		for _, b := range []string{"", "x", "key = \\", "API_KEY=", "secret:"} {
			checkSame(t, ref, rules, "a.go", b+"\n"+a+"\n"+b+"\n"+a)
		}
	}
	for _, l := range append(trickyLines, gateLines...) {
		checkSame(t, ref, rules, "", l)
		checkSame(t, ref, rules, "", l+"\n"+l)
		checkSame(t, ref, rules, "a.go", "x\n"+l+"\ny")
	}
}

// TestSplitDetectionPathAllowlists compares the split detection with gitleaks' with global
// allowlists that allow by path: alone, with expressions on the line ("or"), and with stop words
// ("and"). The split detection checks their paths after detecting.
func TestSplitDetectionPathAllowlists(t *testing.T) {
	repo := "[[allowlists]]\nregexTarget = \"line\"\npaths = ['''^docs/''']\nregexes = ['''(?i)example''']\n" +
		"\n[[allowlists]]\ncondition = \"AND\"\npaths = ['''^cfg/''']\nstopwords = [\"zx81\"]\n" +
		"\n[[allowlists]]\npaths = ['''\\.lock$''']\n"
	base := mustRules(t)
	global, _, err := repoAllowlists([]byte(repo), base.cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	rules := &SecretRules{cfg: base.cfg, stop: base.stop, split: withAllowlists(base.cfg, base.stop, global, nil)}
	cfg, err := gitleaksConfig(lensgateRules)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Allowlists = append(cfg.Allowlists, global...)
	ref := referenceOf(cfg)
	var lines []string
	for _, text := range plantedFiles(t) {
		lines = append(lines, strings.Split(text, "\n")...)
	}
	lines = append(append(lines, trickyLines...), gateLines...)
	for i := 0; i+6 <= len(lines); i += 3 {
		text := strings.Join(lines[i:i+6], "\n") + "\nexample_key = 'Zx81kQm02LpWvB7rT4cN'"
		for _, path := range []string{"", "docs/a.md", "cfg/app.env", "main.go", "go.sum", "yarn.lock", "x.lock"} {
			checkSame(t, ref, rules, path, text)
		}
	}
}

// FuzzSplitDetection checks the split detection against gitleaks' whole-text Detect on any text.
func FuzzSplitDetection(f *testing.F) {
	for _, l := range append(trickyLines, gateLines...) {
		f.Add("x\n" + l + "\n" + l)
	}
	f.Add("API_KEY=\nOTHER_KEY=\n")
	rules := mustRules(f)
	ref := wholeDetector(f)
	f.Fuzz(func(t *testing.T, text string) {
		checkSame(t, ref, rules, "f.go", text)
	})
}

// BenchmarkSecretsDetection compares, on 50-line texts of this repository's Go files, gitleaks'
// Detect of the whole text with the split detection: go test -bench SecretsDetection.
func BenchmarkSecretsDetection(b *testing.B) {
	rules := mustRules(b)
	ref := wholeDetector(b)
	var chunks []string
	code := repoLines(b)
	for i := 0; i+50 <= len(code) && len(chunks) < 200; i += 50 {
		chunks = append(chunks, strings.Join(code[i:i+50], "\n"))
	}
	b.Run("gitleaks", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ref.all.Detect(detect.Fragment{Raw: chunks[i%len(chunks)], FilePath: "x.go"})
		}
	})
	b.Run("split", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			rules.split.detect(detect.Fragment{Raw: chunks[i%len(chunks)], FilePath: "x.go"})
		}
	})
}
