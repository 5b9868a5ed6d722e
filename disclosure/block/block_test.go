package block

import (
	"errors"
	"strings"
	"testing"
)

const workedBody = "# Title\n\nSome PR text.\n\n" + Begin + "\n- **X:** y\n" + End + "\n\nTail.\n"

func TestBodyCoreWorkedExample(t *testing.T) {
	core, err := BodyCore(workedBody)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Title\n\nSome PR text.\n\n" + Token + "\n\nTail.\n"; string(core) != want {
		t.Fatalf("core %q", core)
	}
	d, _ := BodyCoreDigest(workedBody)
	if d != "ad3dd98c8782995d4665fa0bfeb2e4bf17d78cf6df392da0878d2052cdaa5a9a" {
		t.Fatalf("digest %s", d)
	}
}

const rerendered = "# Title\n\nSome PR text.\n\n" + Begin + "\n" +
	"- **Involvement:** an agent\n- **Review:** 1 run(s), coverage PARTIAL\n" +
	"- **Findings:** 2 total (1 dismissed, 1 fixed)\n" +
	"- **Assurance:** selfDeclared \u2014 not independently witnessed\n" +
	"- **Limits:** offline verification cannot establish currency\n" +
	"- **Receipt:** `sha256:0000000000000000000000000000000000000000000000000000000000000000`\n" +
	End + "\n\nTail.\n"

func TestDisclosureCoreWorkedExample(t *testing.T) {
	d, err := DisclosureCoreDigest(rerendered)
	if err != nil {
		t.Fatal(err)
	}
	if d != "95472aa2f25116a62337a77f25b28129cb915b7e5072fdc3a2f6473f631b01e7" {
		t.Fatalf("disclosure core %s", d)
	}
	other := strings.Replace(rerendered, "sha256:0000", "sha256:abcd", 1)
	if d2, _ := DisclosureCoreDigest(other); d2 != d {
		t.Fatal("receipt digest value is not masked")
	}
	if bc, _ := BodyCoreDigest(rerendered); bc != "ad3dd98c8782995d4665fa0bfeb2e4bf17d78cf6df392da0878d2052cdaa5a9a" {
		t.Fatal("re-rendered block moved the body core")
	}
	noReceipt := strings.Replace(rerendered, "\n- **Receipt:** `sha256:0000000000000000000000000000000000000000000000000000000000000000`", "", 1)
	if d3, _ := DisclosureCoreDigest(noReceipt); d3 == d {
		t.Fatal("presence of the Receipt line is not covered")
	}
}

func TestAmbiguousBodiesAreRefused(t *testing.T) {
	tests := map[string]struct {
		body string
		err  error
	}{
		"unbalanced":    {"a " + Begin + " b", ErrUnbalanced},
		"only end":      {End, ErrUnbalanced},
		"duplicated":    {Begin + End + Begin + End, ErrDuplicated},
		"end first":     {End + " x " + Begin, ErrEndFirst},
		"invalid UTF-8": {"\xff" + Begin + End, ErrNotUTF8},
	}
	for name, tt := range tests {
		if _, err := BodyCore(tt.body); !errors.Is(err, tt.err) {
			t.Errorf("%s body core: %v, want %v", name, err, tt.err)
		}
		if _, err := DisclosureCore(tt.body); !errors.Is(err, tt.err) {
			t.Errorf("%s disclosure core: %v, want %v", name, err, tt.err)
		}
	}
	if _, err := DisclosureCore("no block"); !errors.Is(err, ErrNoBlock) {
		t.Errorf("no block: %v", err)
	}
	if core, err := BodyCore("plain\r\n"); err != nil || string(core) != "plain\r\n" {
		t.Errorf("body without block changed: %q %v", core, err)
	}
}

func TestFirstBlockMovesTheDigest(t *testing.T) {
	body := "Fixes the parser.\n"
	prepared, err := Prepare(body)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := BodyCoreDigest(body)
	b, _ := BodyCoreDigest(prepared)
	if a == b {
		t.Fatal("introducing a block kept the digest")
	}
}

func TestSplice(t *testing.T) {
	blk, err := Render(Fields{Involvement: "a", Review: "1 run(s), coverage PARTIAL", Findings: "0 total (none recorded)",
		Assurance: "selfDeclared \u2014 not independently witnessed", Limits: "l",
		Receipt: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{"", "text", "text\n", "text\n\n", "crlf\r\n", "  trailing spaces  ",
		"before\n" + Begin + "\nold\n" + End + "\nafter\r\n"}
	for _, body := range bodies {
		prepared, err := Prepare(body)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Splice(body, blk)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if strings.Count(out, Begin) != 1 || !strings.Contains(out, blk) {
			t.Fatalf("%q: block not spliced: %q", body, out)
		}
		want, _ := BodyCoreDigest(prepared)
		got, _ := BodyCoreDigest(out)
		if got != want {
			t.Errorf("%q: body core moved", body)
		}
		// Author text outside the block is kept byte for byte.
		s := strings.Index(prepared, Begin)
		e := strings.Index(prepared, End) + len(End)
		if !strings.HasPrefix(out, prepared[:s]) || !strings.HasSuffix(out, prepared[e:]) {
			t.Errorf("%q: author text changed: %q", body, out)
		}
		if !strings.Contains(body, Begin) && !strings.HasPrefix(out, body) {
			t.Errorf("%q: author text is not a prefix", body)
		}
		// Splicing again replaces, it does not add.
		again, err := Splice(out, blk)
		if err != nil || again != out {
			t.Errorf("%q: second splice changed the body: %v", body, err)
		}
	}
	if _, err := Splice(Begin+End+Begin+End, blk); err == nil {
		t.Error("spliced into a body with two blocks")
	}
	for _, bad := range []string{"no markers", Begin + "\nx", blk + "\n" + blk} {
		if _, err := Splice("body", bad); err == nil {
			t.Errorf("spliced an invalid block %q", bad)
		}
	}
}

func TestRenderAndParse(t *testing.T) {
	f := Fields{Involvement: "x, y", Review: "2 run(s), coverage COMPLETE", Findings: "1 total (1 open)",
		Assurance: "selfDeclared \u2014 not independently witnessed", Limits: "a; b"}
	blk, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Begin + "\n- **Involvement:** x, y\n- **Review:** 2 run(s), coverage COMPLETE\n" +
		"- **Findings:** 1 total (1 open)\n- **Assurance:** selfDeclared \u2014 not independently witnessed\n" +
		"- **Limits:** a; b\n" + End
	if blk != want {
		t.Fatalf("got\n%s\nwant\n%s", blk, want)
	}
	lines, err := Parse("intro\n" + blk + "\n")
	if err != nil || len(lines) != 5 || lines[4] != (Line{LabelLimits, "a; b"}) {
		t.Fatalf("parse: %v %#v", err, lines)
	}
	if ReceiptDigest(lines) != "" {
		t.Error("receipt digest without a Receipt line")
	}
	if _, err := Render(Fields{Receipt: "XYZ"}); err == nil {
		t.Error("rendered a malformed receipt digest")
	}
	if _, err := Render(Fields{Limits: End}); err == nil {
		t.Error("rendered a value holding a marker")
	}
}

func FuzzBlock(f *testing.F) {
	f.Add(workedBody)
	f.Add(rerendered)
	f.Add(Begin + End + Begin)
	f.Add("- **:** \n" + End + Begin)
	f.Fuzz(func(t *testing.T, body string) {
		core, errCore := BodyCore(body)
		_, _ = DisclosureCore(body)
		lines, errParse := Parse(body)
		if errParse == nil && errCore != nil {
			t.Fatal("parsed a block the body core refuses")
		}
		_ = ReceiptDigest(lines)
		out, err := Splice(body, Placeholder)
		if err != nil {
			return
		}
		prepared, _ := Prepare(body)
		c1, _ := BodyCore(prepared)
		c2, _ := BodyCore(out)
		if string(c1) != string(c2) {
			t.Fatalf("splice moved the body core of %q", body)
		}
		_ = core
	})
}

// The digests are over exact bytes: line endings, trailing whitespace and Unicode forms are not
// normalised, so a body re-saved with CRLF or NFD is a different body (the spec says so, and
// two producers that normalised differently would see tampering where there is none).
func TestNoNormalisation(t *testing.T) {
	blk := Begin + "\n- **Involvement:** x\n" + End
	pairs := map[string][2]string{
		"CRLF vs LF":          {"a\nb\n" + blk + "\n", "a\r\nb\r\n" + blk + "\r\n"},
		"trailing whitespace": {"a\n" + blk, "a \n" + blk},
		"NFC vs NFD":          {"caf\u00e9\n" + blk, "cafe\u0301\n" + blk},
		"trailing LF":         {"a\n" + blk, "a\n" + blk + "\n"},
	}
	for name, p := range pairs {
		a, err1 := BodyCoreDigest(p[0])
		b, err2 := BodyCoreDigest(p[1])
		if err1 != nil || err2 != nil || a == b {
			t.Errorf("%s: body core digests %s %s (%v %v); want two different digests", name, a, b, err1, err2)
		}
	}
	// Inside the block CR is kept too: only LF is trimmed at the ends.
	lf, _ := DisclosureCoreDigest("x" + blk)
	crlf, _ := DisclosureCoreDigest("x" + strings.ReplaceAll(blk, "\n", "\r\n"))
	if lf == crlf {
		t.Error("a CRLF block has the disclosure core of an LF block")
	}
}

// Markers are found by plain substring search: a marker quoted in a code fence or nested in a
// block still counts, so such bodies are refused rather than silently picking one span.
func TestMarkersAreNotContextAware(t *testing.T) {
	blk := Begin + "\nx\n" + End
	tests := map[string]struct {
		body string
		err  error
	}{
		"second block in a code fence": {"```\n" + blk + "\n```\n" + blk, ErrDuplicated},
		"begin quoted in a code fence": {"```\n" + Begin + "\n```\n" + blk, ErrUnbalanced},
		"nested":                       {Begin + "\n" + blk + "\n" + End, ErrDuplicated},
		"misordered pair":              {End + "\n" + Begin + "\n", ErrEndFirst},
		"begin twice, end once":        {Begin + Begin + End, ErrUnbalanced},
	}
	for name, tt := range tests {
		if _, err := BodyCore(tt.body); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", name, err, tt.err)
		}
		if _, err := Splice(tt.body, blk); err == nil {
			t.Errorf("%s: spliced into an ambiguous body", name)
		}
	}
	// The lone block inside a code fence is still the block.
	fenced := "```\n" + blk + "\n```\n"
	core, err := BodyCore(fenced)
	if err != nil || string(core) != "```\n"+Token+"\n```\n" {
		t.Errorf("fenced block: %q %v", core, err)
	}
}
