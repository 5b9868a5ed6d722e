package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func lensOrder(p Policy) []string {
	var out []string
	for _, l := range p.Lenses {
		out = append(out, l.Name)
	}
	return out
}

func TestParseYAGATOMLExample(t *testing.T) {
	p, err := ParseYAGATOML("/abs/policy.toml", readTestdata(t, "yaga", "agent-review-policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lensOrder(p), []string{"correctness", "security", "documentation"}) {
		t.Errorf("order %v", lensOrder(p))
	}
	if !slices.Equal(p.Required, []string{"correctness", "security"}) || p.Aggregation != AggregationAllRequired || p.Version != 1 {
		t.Errorf("%+v", p)
	}
	doc := p.Lenses[2]
	if doc.Required || doc.Outcome != OutcomeAdvisory || doc.Publication != PublicationComment || doc.Preset != "docs" {
		t.Errorf("%+v", doc)
	}
	if !p.Lenses[0].Required || p.Lenses[0].Publication != PublicationInline {
		t.Errorf("%+v", p.Lenses[0])
	}
}

// Lens order is document order whatever the key names sort to, in every TOML layout.
func TestParseYAGATOMLOrder(t *testing.T) {
	layouts := map[string]string{
		"tables": `[agent-review]
version = 1
required = ["mid"]
[agent-review.agents.zeta]
preset = "p"
instruction = "z"
[agent-review.agents.alpha]
preset = "p"
instruction = "a"
[agent-review.agents.mid]
preset = "p"
instruction = "m"
`,
		"inline": `[agent-review]
version = 1
required = ["mid"]
agents = { zeta = { preset = "p", instruction = "z" }, alpha = { preset = "p", instruction = "a" }, mid = { preset = "p", instruction = "m" } }
`,
		"dotted": `[agent-review]
version = 1
required = ["mid"]
agents.zeta.preset = "p"
agents.zeta.instruction = "z"
agents.alpha.preset = "p"
agents.alpha.instruction = "a"
agents.mid.instruction = "m"
agents.mid.preset = "p"
`,
	}
	for name, doc := range layouts {
		p, err := ParseYAGATOML("p.toml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := lensOrder(p); !slices.Equal(got, []string{"zeta", "alpha", "mid"}) {
			t.Errorf("%s: order %v", name, got)
		}
	}
}

func TestParseYAGATOMLPyproject(t *testing.T) {
	doc := "[project]\nname = \"x\"\n[tool.ruff]\nline-length = 100\n[tool.yaga.agent-review]\nversion = 1\nrequired = [\"b\"]\n[tool.yaga.agent-review.agents.b]\npreset = \"p\"\ninstruction = \"i\"\n[tool.yaga.agent-review.agents.a]\npreset = \"p\"\ninstruction = \"i\"\noutcome = \"advisory\"\n"
	p, err := ParseYAGATOML("/x/pyproject.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := lensOrder(p); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("order %v", got)
	}
	// The same text under another name has no [agent-review] table at the root.
	if _, err := ParseYAGATOML("/x/other.toml", []byte(doc)); err == nil || err.(Problems).First() != "/x/other.toml has no [agent-review] table" {
		t.Errorf("got %v", err)
	}
	if _, err := ParseYAGATOML("/x/pyproject.toml", []byte("[project]\nname='x'\n")); err == nil || err.(Problems).First() != "/x/pyproject.toml has no [tool.yaga] table" {
		t.Errorf("got %v", err)
	}
}

func lensTOML(name, body string) string {
	return fmt.Sprintf("[agent-review.agents.%s]\n%s\n", name, body)
}

func TestParseYAGATOMLErrors(t *testing.T) {
	const P = "/p/policy.toml"
	head := "[agent-review]\nversion = 1\nrequired = [\"a\"]\n"
	okLens := lensTOML("a", "preset = \"p\"\ninstruction = \"i\"")
	tests := []struct{ name, doc, msg string }{
		{"not UTF-8", "\xff", "Agent review policy is not valid UTF-8: " + P},
		{"syntax", "[agent-review\n", "invalid Agent review policy TOML in " + P + ": "},
		{"no table", "x = 1\n", P + " has no [agent-review] table"},
		{"table is a string", "agent-review = \"x\"\n", P + " has no [agent-review] table"},
		{"unknown root keys, first sorted", "[agent-review]\nzz = 1\nextra = 2\nversion = 2\n", "agent-review has unknown key extra in " + P},
		{"version missing", "[agent-review]\nrequired = [\"a\"]\n" + okLens, "agent-review.version must be integer 1 in " + P},
		{"version float", "[agent-review]\nversion = 1.0\n", "agent-review.version must be integer 1 in " + P},
		{"version bool", "[agent-review]\nversion = true\n", "agent-review.version must be integer 1 in " + P},
		{"version string", "[agent-review]\nversion = \"1\"\n", "agent-review.version must be integer 1 in " + P},
		{"aggregation", head + "aggregation = \"most\"\n" + okLens, "agent-review.aggregation is invalid in " + P},
		{"agents missing", head, "agent-review.agents must be a nonempty table in " + P},
		{"agents empty", head + "agents = {}\n", "agent-review.agents must be a nonempty table in " + P},
		{"agents a list", head + "agents = [1]\n", "agent-review.agents must be a nonempty table in " + P},
		{"33 agents", head + func() string {
			var b strings.Builder
			for i := range 33 {
				b.WriteString(lensTOML(fmt.Sprintf("l%d", i), "preset = \"p\"\ninstruction = \"i\""))
			}
			return b.String()
		}(), "agent-review.agents exceeds 32 entries in " + P},
		{"lens name", head + lensTOML(`"Bad Lens"`, "preset = \"p\"\ninstruction = \"i\""), "agent-review lens name is invalid in " + P},
		{"lens name too long", head + lensTOML("a"+strings.Repeat("b", 64), "preset = \"p\"\ninstruction = \"i\""), "agent-review lens name is invalid in " + P},
		{"lens not a table", head + "[agent-review.agents]\na = \"x\"\n", "agent-review.agents.a must be a table in " + P},
		{"lens unknown keys, first sorted", head + lensTOML("a", "preset = \"p\"\ninstruction = \"i\"\nzz = 1\nmodel = \"x\""), "agent-review.agents.a has unknown key model in " + P},
		{"preset missing", head + lensTOML("a", "instruction = \"i\""), "agent-review.agents.a.preset is invalid in " + P},
		{"preset upper", head + lensTOML("a", "preset = \"Codex\"\ninstruction = \"i\""), "agent-review.agents.a.preset is invalid in " + P},
		{"instruction missing", head + lensTOML("a", "preset = \"p\""), "agent-review.agents.a.instruction is required in " + P},
		{"instruction blank (Python whitespace)", head + lensTOML("a", "preset = \"p\"\ninstruction = \" \\u001c\\u2028\\u3000\""), "agent-review.agents.a.instruction is required in " + P},
		{"instruction number", head + lensTOML("a", "preset = \"p\"\ninstruction = 3"), "agent-review.agents.a.instruction is required in " + P},
		{"instruction NUL", head + lensTOML("a", "preset = \"p\"\ninstruction = \"a\\u0000\""), "agent-review.agents.a.instruction is oversized or unsafe"},
		{"instruction 4097 bytes", head + lensTOML("a", "preset = \"p\"\ninstruction = \""+strings.Repeat("é", 2048)+"x\""), "agent-review.agents.a.instruction is oversized or unsafe"},
		{"outcome", head + lensTOML("a", "preset = \"p\"\ninstruction = \"i\"\noutcome = \"block\""), "agent-review.agents.a.outcome is invalid in " + P},
		{"publication", head + lensTOML("a", "preset = \"p\"\ninstruction = \"i\"\npublication = \"email\""), "agent-review.agents.a.publication is invalid in " + P},
		{"first lens error wins", head + lensTOML("a", "preset = \"P\"\ninstruction = \"\"") + lensTOML("b", "preset = \"p\""), "agent-review.agents.a.preset is invalid in " + P},
		{"lens errors before required", "[agent-review]\nversion = 1\n" + lensTOML("a", "preset = \"p\""), "agent-review.agents.a.instruction is required in " + P},
		{"required missing", "[agent-review]\nversion = 1\n" + okLens, "agent-review.required must be a nonempty bounded array in " + P},
		{"required empty", "[agent-review]\nversion = 1\nrequired = []\n" + okLens, "agent-review.required must be a nonempty bounded array in " + P},
		{"required string", "[agent-review]\nversion = 1\nrequired = \"a\"\n" + okLens, "agent-review.required must be a nonempty bounded array in " + P},
		{"required bad name", "[agent-review]\nversion = 1\nrequired = [1]\n" + okLens, "required Agent review lens name is invalid in " + P},
		{"required repeats", "[agent-review]\nversion = 1\nrequired = [\"a\", \"a\"]\n" + okLens, "agent-review.required repeats a in " + P},
		{"required unknown", "[agent-review]\nversion = 1\nrequired = [\"b\"]\n" + okLens, "agent-review.required names unknown lens b in " + P},
		{"required advisory", "[agent-review]\nversion = 1\nrequired = [\"a\"]\n" + lensTOML("a", "preset = \"p\"\ninstruction = \"i\"\noutcome = \"advisory\""), "agent-review.required lens a must have outcome review"},
		{"oversized", "#" + strings.Repeat("x", MaxPolicyFileBytes), "Agent review policy exceeds 1048576 bytes: " + P},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseYAGATOML(P, []byte(tt.doc))
			probs, ok := err.(Problems)
			if !ok || len(probs) != 1 {
				t.Fatalf("got %v (%T), want one problem", err, err)
			}
			if got := probs.First(); got != tt.msg && !(strings.HasSuffix(tt.msg, ": ") && strings.HasPrefix(got, tt.msg)) {
				t.Errorf("got  %q\nwant %q", got, tt.msg)
			}
		})
	}
}

func TestParseYAGATOMLBOMAndDefaults(t *testing.T) {
	doc := "\ufeff[agent-review]\nversion = 1\nrequired = [\"a\"]\n[agent-review.agents.a]\npreset = \"p\"\ninstruction = \"i\"\n"
	p, err := ParseYAGATOML("p.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Lenses[0]
	if p.Aggregation != AggregationAllRequired || l.Outcome != OutcomeReview || l.Publication != PublicationReview || !l.Required {
		t.Errorf("%+v", p)
	}
}

func TestParsePolicyFileDispatch(t *testing.T) {
	yaml := "agent_review:\n  version: 1\n  required: [a]\n  agents:\n    a: {preset: p, instruction: i}\n"
	for _, name := range []string{".asdd.yml", "x.yaml", "CONFIG.YML"} {
		p, err := ParsePolicyFile(name, []byte(yaml))
		if err != nil || len(p.Lenses) != 1 {
			t.Errorf("%s: %v %+v", name, err, p)
		}
	}
	p, err := ParsePolicyFile(".asdd.yml", []byte("runtime: builtin\n"))
	if err != nil || lensOrder(p)[0] != "security" {
		t.Errorf("an .asdd.yml without agent_review uses the default policy: %v %+v", err, p)
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{File: "a.yml", Line: 3, Column: 5, Message: "m", Hint: "h"}
	if p.String() != "a.yml:3:5: m (hint: h)" {
		t.Error(p.String())
	}
	if (Problem{File: "a.toml", Message: "m"}).String() != "m" {
		t.Error("position-less problems print the message alone")
	}
}

func TestIsPySpace(t *testing.T) {
	for _, r := range []rune{'\t', '\n', 0x0b, 0x0c, '\r', 0x1c, 0x1d, 0x1e, 0x1f, ' ', 0x85, 0xa0, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000} {
		if !IsPySpace(r) {
			t.Errorf("%U should be whitespace", r)
		}
	}
	for _, r := range []rune{'a', 0x00, 0x08, 0x200b, 0xfeff, 0x180e} {
		if IsPySpace(r) {
			t.Errorf("%U should not be whitespace", r)
		}
	}
}

// TestYAGAProblemPositions: a policy problem carries the line of its key or value, or of the
// table a missing key belongs in; multi-line strings and inline tables do not mislead it, and
// a syntax error carries tomllib's position.
func TestYAGAProblemPositions(t *testing.T) {
	head := "# policy\n" + // 1
		"[agent-review]\n" + // 2
		"version = 1\n" + // 3
		"required = [\n  \"sec\",\n]\n" + // 4-6
		"[agent-review.agents.sec]\n" + // 7
		"instruction = \"\"\"\nversion = 9\n[fake]\n\"\"\"\n" // 8-11
	tests := []struct {
		name, file, doc string
		line            int
	}{
		{"missing preset at its table", "p.toml", head, 7},
		{"value", "p.toml", head + "preset = \"p\"\noutcome = \"nope\"\n", 13},
		{"unknown key", "p.toml", head + "preset = \"p\"\n\nmodel = 1\n", 14},
		{"inline lens", "p.toml", head + "preset = \"p\"\n[agent-review.agents]\ndocs = { preset = \"docs\", instruction = \"i\", outcome = \"x\" }\n", 14},
		{"quoted dotted key", "p.toml", head + "preset = \"p\"\n[agent-review.agents]\n\"quoted\".instruction = \"i\"\n\"quoted\".preset = \"p\"\n\"quoted\".publication = \"y\"\n", 16},
		{"missing required at the root table", "p.toml", "[agent-review]\nversion = 1\n[agent-review.agents.a]\npreset = \"p\"\ninstruction = \"i\"\n", 1},
		{"version in pyproject", "pyproject.toml", "[project]\nname = \"x\"\n[tool.yaga.agent-review]\nversion = 3\n", 4},
		{"syntax error at the end", "p.toml", "[agent-review]\nversion = 1\nrequired = [\"a\"\n", 3},
		{"syntax error inside", "p.toml", "[agent-review]\nversion = 1\nrequired = [\"a\" x]\n", 3},
	}
	for _, tt := range tests {
		_, err := ParseYAGATOML(tt.file, []byte(tt.doc))
		probs, ok := err.(Problems)
		if !ok || len(probs) != 1 {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if probs[0].Line != tt.line {
			t.Errorf("%s: line %d, want %d (%s)", tt.name, probs[0].Line, tt.line, probs[0].Message)
		}
	}
}
