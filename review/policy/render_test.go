package policy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
)

func TestWriteStringMatchesPython(t *testing.T) {
	var in strings.Builder
	for i := 0; i < 0x80; i++ {
		in.WriteRune(rune(i))
	}
	in.WriteString("\u2028\u2029<>&/é日😀\u00a0\u0085\u200e")
	// json.dumps(s, ensure_ascii=False) from Python 3.
	want := `"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_` + "`" + `abcdefghijklmnopqrstuvwxyz{|}~` + "\x7f\u2028\u2029<>&/é日😀\u00a0\u0085\u200e\""
	var b strings.Builder
	writeString(&b, in.String())
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

func TestIndentJSONLayout(t *testing.T) {
	s := "x"
	got := indentJSON(obj{{"a", []string{}}, {"b", obj{}}, {"c", []any{obj{{"d", (*string)(nil)}, {"e", &s}}}}, {"f", true}})
	want := "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    {\n      \"d\": null,\n      \"e\": \"x\"\n    }\n  ],\n  \"f\": true\n}\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSafeText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"line\x1b[31m\nnext", 100, "line?[31m?next"},
		{"  a \u2028 b\u3000\u3000c  ", 100, "a b c"},
		{"bidi\u202eend\u200b", 100, "bidi?end?"},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
		{"日本語です", 3, "日本…"},
	}
	for _, tt := range tests {
		if got := SafeText(tt.in, tt.max); got != tt.want {
			t.Errorf("SafeText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestAnnotationEscapingAndBounds(t *testing.T) {
	if got := AnnotationData("failed: line one\nline two % done\r\x07"); got != "failed: line one%0Aline two %25 done%0D?" {
		t.Errorf("data %q", got)
	}
	if got := AnnotationProperty("YAGA Agent review: a,b"); got != "YAGA Agent review%3A a%2Cb" {
		t.Errorf("property %q", got)
	}
	// The cut at bound-1 never splits a %XX escape: put a '%' at each position near the cut.
	for offset := 0; offset < 6; offset++ {
		s := strings.Repeat("y", maxAnnotationData-4+offset) + "%" + strings.Repeat("z", 20)
		got := AnnotationData(s)
		if n := utf8.RuneCountInString(got); n > maxAnnotationData {
			t.Errorf("offset %d: %d code points", offset, n)
		}
		body := strings.TrimSuffix(got, "…")
		if i := strings.LastIndex(body, "%"); i >= 0 && len(body)-i < 3 {
			t.Errorf("offset %d: split escape in %q", offset, body[len(body)-5:])
		}
		if !strings.HasSuffix(got, "…") {
			t.Errorf("offset %d: no ellipsis", offset)
		}
	}
	long := strings.Repeat("é", 4096)
	if n := utf8.RuneCountInString(AnnotationProperty(long)); n != maxAnnotationProp {
		t.Errorf("property bound %d", n)
	}
	if got := AnnotationData("short"); got != "short" {
		t.Errorf("%q", got)
	}
}

func TestRenderError(t *testing.T) {
	err := configErr("Agent review results are missing lens(es): correctness\nx%")
	if got := RenderError(err, FormatJSON); got != "{\n  \"schema_version\": 1,\n  \"error\": {\n    \"kind\": \"configuration\",\n    \"message\": \"Agent review results are missing lens(es): correctness?x%\"\n  }\n}\n" {
		t.Errorf("json %q", got)
	}
	if got := RenderError(err, FormatGitHub); got != "::error title=YAGA Agent review::Agent review results are missing lens(es): correctness?x%25\n" {
		t.Errorf("github %q", got)
	}
	if got := RenderError(inputErr("output format must be text or json"), "xml"); got != "YAGA input error: output format must be text or json\n" {
		t.Errorf("text %q", got)
	}
	if got := RenderError(errPlain("boom"), FormatText); got != "YAGA configuration error: boom\n" {
		t.Errorf("plain %q", got)
	}
}

type errPlain string

func (e errPlain) Error() string { return string(e) }

func TestParseFormat(t *testing.T) {
	if f, err := ParseFormat("JSON", FormatText, FormatJSON); err != nil || f != FormatJSON {
		t.Errorf("%v %v", f, err)
	}
	if _, err := ParseFormat("github", FormatText, FormatJSON); err == nil || err.Error() != "output format must be text or json" || AsError(err).Kind != KindInput {
		t.Errorf("%v", err)
	}
	if _, err := ParseFormat("xml", FormatText, FormatJSON, FormatGitHub); err == nil || err.Error() != "output format must be text, json, or github" {
		t.Errorf("%v", err)
	}
}

func TestRenderGitHubMissingEntry(t *testing.T) {
	// Programmatic evaluations can name a lens without an entry; the detail says so.
	ev := Evaluation{State: Failed, PlanDigest: goodDigest, BlockingFailures: []string{"x"}}
	got := renderGitHub(ev)
	if !strings.HasPrefix(got, "::error title=YAGA Agent review%3A x::failed: no result was returned\n") {
		t.Errorf("%q", got)
	}
}

func TestRenderPlanTextSanitises(t *testing.T) {
	p := config.DefaultPolicy()
	p.Lenses[0].Instruction = "line\x1b[31m\nnext"
	pl := mustPlan(t, p)
	out := RenderPlan(pl, FormatText)
	if !strings.Contains(out, "  line?[31m?next\n") || strings.Contains(out, "\x1b") {
		t.Errorf("%q", out)
	}
	if !strings.Contains(out, "- tests [advisory, advisory] via tests\n") {
		t.Errorf("%q", out)
	}
}
