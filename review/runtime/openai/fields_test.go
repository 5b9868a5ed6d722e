package openai_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
)

// twoLensAnswer is an answer for correctness and style whose correctness entry is entry (a
// JSON object) and whose style entry fails the lens on a blocking finding.
func twoLensAnswer(entry string) string {
	return `{"schema":"asdd/review/v0.1","lenses":[` + entry + `,` +
		`{"lens":"style","findings":[{"path":"loader.go:3","severity":"block","title":"t","message":"A blocking style defect.","suggestion":null}],` +
		`"summary":"Style fails.","verdict":"request-changes"}],"summary":"s","recommendation":"comment"}`
}

func reviewTwoLenses(t *testing.T, answer string) *review.Decision {
	t.Helper()
	model := newModel(t, func(modelfake.Request) modelfake.Reply { return reply(answer) })
	d, err := pipeline(t, model, nil).Review(context.Background(), subject(), repoConfig("correctness", "style"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMalformedOptionalFieldsAreDropped: a malformed optional field of one lens's entry is
// dropped with a note in that lens's summary; both lenses keep their own verdicts.
func TestMalformedOptionalFieldsAreDropped(t *testing.T) {
	const ok = `"summary":"Fine.","verdict":"ok"}`
	finding := func(extra string) string {
		return `{"lens":"correctness","findings":[{"path":"loader.go:2","severity":"warn","title":"Naming","message":"A name could be clearer."` +
			extra + `}],` + ok
	}
	cases := []struct {
		name, entry, note string
		suggestion        bool
	}{
		{"lines not N or N-M", finding(`,"suggestion":{"lines":"two to three","replacement":"x"}`), `lines "two to three" is not "N" or "N-M"`, false},
		{"lines backwards", finding(`,"suggestion":{"lines":"9-3","replacement":"x"}`), `end before they start`, false},
		{"suggestion as a plain string", finding(`,"suggestion":"rename it to loadConfig"`), `not an object with lines and replacement`, false},
		{"title not text", `{"lens":"correctness","findings":[{"path":"loader.go:2","severity":"warn","title":{"x":1},"message":"m"}],` + ok,
			`the title of finding 1 (not text)`, false},
		{"unknown key in a finding", finding(`,"confidence":0.9`), `the unknown key "confidence" of finding 1`, false},
		{"unknown key in the entry", `{"lens":"correctness","approved":true,"findings":[],` + ok, `the unknown key "approved"`, false},
		{"summary not text", `{"lens":"correctness","findings":[],"summary":["a"],"verdict":"ok"}`, `the summary (not text)`, false},
		{"lines a number", finding(`,"suggestion":{"lines":3,"replacement":"x"}`), `lines is not text "N" or "N-M"`, false},
		{"an empty suggestion is none", finding(`,"suggestion":{"lines":"","replacement":""}`), "", false},
		{"a valid suggestion is kept", finding(`,"suggestion":{"lines":"2-3","replacement":"x"}`), "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := reviewTwoLenses(t, twoLensAnswer(c.entry))
			cor, sty := lens(d, "correctness"), lens(d, "style")
			if cor.Outcome != review.OutcomePassed {
				t.Fatalf("correctness %+v, want passed", cor)
			}
			if sty.Outcome != review.OutcomeFailed || len(sty.Findings) != 1 {
				t.Fatalf("style %+v, want failed on its finding", sty)
			}
			if c.note == "" {
				if strings.Contains(cor.Summary, "Dropped") {
					t.Fatalf("summary %q notes a drop", cor.Summary)
				}
			} else if !strings.Contains(cor.Summary, "Dropped from the model's answer") || !strings.Contains(cor.Summary, c.note) {
				t.Fatalf("summary %q, want a note naming %q", cor.Summary, c.note)
			}
			if strings.Contains(sty.Summary, "Dropped") {
				t.Fatalf("the other lens's summary carries the note: %q", sty.Summary)
			}
			var withSuggestion bool
			for _, f := range d.Findings {
				if f.Lens == "correctness" && f.Suggestion != nil {
					withSuggestion = true
				}
			}
			if withSuggestion != c.suggestion {
				t.Fatalf("suggestion kept %v, want %v (%+v)", withSuggestion, c.suggestion, d.Findings)
			}
		})
	}
}

// TestMalformedDecidingFieldsFailOnlyTheirLens: what decides an outcome fails closed, for the
// lens it belongs to only.
func TestMalformedDecidingFieldsFailOnlyTheirLens(t *testing.T) {
	cases := []struct {
		name, entry, cause string
	}{
		{"verdict", `{"lens":"correctness","findings":[],"summary":"s","verdict":"approve"}`, `verdict "approve"`},
		{"no verdict", `{"lens":"correctness","findings":[],"summary":"s"}`, `verdict`},
		{"severity", `{"lens":"correctness","findings":[{"path":"","severity":"critical","title":"t","message":"m"}],"summary":"s","verdict":"ok"}`,
			`severity "critical"`},
		{"findings not a list", `{"lens":"correctness","findings":"none","summary":"s","verdict":"ok"}`, `no list of findings`},
		{"blocking finding outside the diff", `{"lens":"correctness","findings":[{"path":"other.go:1","severity":"block","title":"t","message":"m"}],"summary":"s","verdict":"ok"}`,
			`not a file of the reviewed diff`},
		{"blocking finding with a path that is not text", `{"lens":"correctness","findings":[{"path":7,"severity":"block","title":"t","message":"m"}],"summary":"s","verdict":"ok"}`,
			`no readable path`},
		{"two entries", `{"lens":"correctness","findings":[],"summary":"s","verdict":"ok"},{"lens":"correctness","findings":[],"summary":"s","verdict":"request-changes"}`,
			`2 entries`},
		{"no lens name", `{"findings":[],"summary":"s","verdict":"ok"}`, `no entry for this lens (it dropped lenses[0], which names no lens)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := reviewTwoLenses(t, twoLensAnswer(c.entry))
			cor, sty := lens(d, "correctness"), lens(d, "style")
			if cor.Outcome != review.OutcomePending || !strings.Contains(cor.Cause, c.cause) {
				t.Fatalf("correctness %+v, want pending naming %q", cor, c.cause)
			}
			if sty.Outcome != review.OutcomeFailed {
				t.Fatalf("style %+v, want its own verdict (failed)", sty)
			}
		})
	}
}

// TestNonBlockingFindingOutsideTheDiffIsDropped: a note or warning on a file the diff does not
// have is dropped with a note; the lens keeps its verdict.
func TestNonBlockingFindingOutsideTheDiffIsDropped(t *testing.T) {
	d := reviewTwoLenses(t, twoLensAnswer(`{"lens":"correctness","findings":[{"path":"elsewhere.go:4","severity":"warn","title":"t","message":"m"}],"summary":"s","verdict":"ok"}`))
	cor := lens(d, "correctness")
	if cor.Outcome != review.OutcomePassed || len(cor.Findings) != 0 || !strings.Contains(cor.Summary, `"elsewhere.go", which is not a file of the reviewed diff`) {
		t.Fatalf("correctness %+v", cor)
	}
}

// TestSchemaOrderAndLinesPattern: the schema sent lists keys in the order chosen for answer
// quality (the verdict after the findings and the summary; a finding's path and severity
// before its title and message), every key is required in that order, and lines carries its
// pattern.
func TestSchemaOrderAndLinesPattern(t *testing.T) {
	model := obedientModel(t)
	if _, err := pipeline(t, model, nil).Review(context.Background(), subject(), repoConfig("correctness")); err != nil {
		t.Fatal(err)
	}
	raw := string(model.Requests()[0].Schema)
	keys := func(object string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`"([a-z_]+)":\{"type"`).FindAllStringSubmatch(object, -1) {
			out = append(out, m[1])
		}
		return out
	}
	// The properties of each object, outermost last, as they appear in the encoding.
	finding := raw[strings.Index(raw, `"findings":{"type":"array","items":`):]
	finding = finding[:strings.Index(finding, `"required"`)]
	if got := strings.Join(keys(finding), ","); got != "findings,items,path,severity,title,message,suggestion,lines,replacement" {
		t.Fatalf("finding keys in order %s", got)
	}
	for _, want := range []string{
		`"required":["lens","findings","summary","verdict"]`,
		`"required":["path","severity","title","message","suggestion"]`,
		`"required":["schema","lenses","summary","recommendation"]`,
		`"required":["lines","replacement"]`,
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("schema lacks %s:\n%s", want, raw)
		}
	}
	lensAt := strings.Index(raw, `"lens":{"type":"string"`)
	if lensAt < 0 || !(lensAt < strings.Index(raw, `"findings":`) && strings.Index(raw, `"findings":`) < strings.Index(raw, `"verdict":`)) {
		t.Fatalf("lens, findings and verdict are not in that order:\n%s", raw)
	}
	var s struct {
		Properties struct {
			Lenses struct {
				Items struct {
					Properties struct {
						Findings struct {
							Items struct {
								Properties struct {
									Suggestion struct {
										Type       []string `json:"type"`
										Properties struct {
											Lines struct {
												Pattern string `json:"pattern"`
											} `json:"lines"`
										} `json:"properties"`
									} `json:"suggestion"`
								} `json:"properties"`
							} `json:"items"`
						} `json:"findings"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"lenses"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	sg := s.Properties.Lenses.Items.Properties.Findings.Items.Properties.Suggestion
	re, err := regexp.Compile(sg.Properties.Lines.Pattern)
	if err != nil || strings.Join(sg.Type, ",") != "object,null" {
		t.Fatalf("suggestion %+v: %v", sg, err)
	}
	for in, want := range map[string]bool{"3": true, "10-12": true, "0": false, "3-": false, "a-b": false, "3,4": false, " 3": false} {
		if re.MatchString(in) != want {
			t.Errorf("lines %q matches %v, want %v", in, !want, want)
		}
	}
}
