package details

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
)

// wireStrings are constants of package disclosure that are not codes a verification reports.
var wireStrings = map[string]bool{
	"V01": true, "V02": true, "V03": true, "StatementType": true, "predicateTypeFmt": true,
	"SchemaVersion": true, "TestResultType": true,
}

// verifierCodes reads every string constant that disclosure declares in codes.go and report.go,
// and disclosure/observation in verify.go:
// reason, advisory and limitation codes, assurance rungs, time and match states, policy
// decisions, currentness, version states and automation blockers. Reading the source means a
// code added there fails this test until it is explained here.
func verifierCodes(t *testing.T) map[string]string {
	t.Helper()
	codes := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range []string{"codes.go", "report.go", filepath.Join("observation", "verify.go")} {
		file, err := parser.ParseFile(fset, filepath.Join("..", "..", "disclosure", f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) || wireStrings[name.Name] {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes[name.Name] = v
				}
			}
		}
	}
	return codes
}

func TestEveryVerifierCodeIsExplained(t *testing.T) {
	codes := verifierCodes(t)
	// A few known constants prove the source was read, not an empty set.
	for _, c := range []string{disclosure.CodeTimeClaimsConflict, disclosure.AdvisoryCoverageLegacy, disclosure.LimitCurrentnessUnknown,
		disclosure.TimeSelfDeclared, disclosure.MatchNotMeasurable, disclosure.DecisionInsufficientEvidence, disclosure.VersionLegacy, observation.CodeRuntimeDiffers} {
		found := false
		for _, v := range codes {
			found = found || v == c
		}
		if !found {
			t.Fatalf("%s not read from disclosure's source; read %d constants", c, len(codes))
		}
	}
	for name, code := range codes {
		if explain(code) == "" {
			t.Errorf("disclosure.%s (%q) has no explanation", name, code)
		}
	}
	// The time semantics the verifier reports are literals of verify.go.
	for _, v := range []string{"LEGACY_V0_1", "V0_2"} {
		if explain(v) == "" {
			t.Errorf("time semantics %q has no explanation", v)
		}
	}
}

func TestEveryObservationVerdictIsExplained(t *testing.T) {
	for _, v := range []string{observation.Match, observation.Mismatch, observation.Absent} {
		if observationVerdicts[v] == "" {
			t.Errorf("runner_observation %q has no explanation", v)
		}
	}
}

func TestEveryAxisIsExplained(t *testing.T) {
	h := &Handler{}
	sv := h.verifyServer([]byte(`{}`), nil, nil)
	if len(sv.Axes) == 0 {
		t.Fatal("no axis reported")
	}
	for _, a := range sv.Axes {
		if axisInfo[a.Name] == "" {
			t.Errorf("axis %q has no explanation", a.Name)
		}
	}
}

func TestPlainWords(t *testing.T) {
	for in, want := range map[string]string{
		"NOT_EVALUATED":       "not evaluated",
		"CURRENTNESS_UNKNOWN": "currentness unknown",
		"MATCH":               "match",
		"passed":              "passed",
		"request-changes":     "request-changes",
		"selfDeclared":        "selfDeclared",
		"0f3a9c":              "0f3a9c",
	} {
		if got := plain(in); got != want {
			t.Errorf("plain(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatusIconsNeedNoFont(t *testing.T) {
	for _, s := range []string{"passed", "failed", "pending", "PARTIAL", "NOT_EVALUATED", "superseded"} {
		st := statusOf(s)
		if len(st.Icon) == 0 || string(st.Icon[:4]) != "<svg" {
			t.Errorf("%s: icon %q is not inline SVG", s, st.Icon)
		}
		for _, r := range st.Word {
			if r > 0x7f {
				t.Errorf("%s: word %q has a character a font may lack", s, st.Word)
			}
		}
	}
	if w := statusOf("PARTIAL").Word; w != "partial" {
		t.Errorf("PARTIAL shown as %q", w)
	}
}
