package observation

import (
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// An exec call makes the statement v0.2; one without stays v0.1 byte for byte; the interpreter is checked against an expectation like the other identities,
// and every rule of the new member is enforced.
func TestInterpreterIsV02(t *testing.T) {
	f := newFixture(t, nil)
	noExec := *f.stmt
	noExec.Calls = []Call{f.stmt.Calls[0], f.stmt.Calls[2]}
	noExec.Calls[1].Started = noExec.Calls[0].Finished
	if s, err := Sign(&noExec, Signer{Key: witnessKey}); err != nil || !strings.Contains(string(mustPayload(t, s.Envelope)), PredicateType+`"`) {
		t.Fatalf("a statement without an exec call is not v0.1: %v", err)
	}
	if v := f.sign(t, witnessKey); !strings.Contains(string(mustPayload(t, v)), PredicateTypeV02) {
		t.Fatal("a statement with an exec call is not v0.2")
	}
	f.stmt.Calls[1].Runtime.InterpreterPath = "/usr/bin/dash"
	f.stmt.Calls[1].Runtime.InterpreterSHA256 = strings.Repeat("f", 64)
	v2 := f.sign(t, witnessKey)
	if !strings.Contains(string(mustPayload(t, v2)), PredicateTypeV02) || !strings.Contains(string(mustPayload(t, v2)), `"schemaVersion":"0.2.0"`) {
		t.Fatalf("payload %s", mustPayload(t, v2))
	}
	o := opts(f)
	if res := Verify(v2, o); res.RunnerObservation != Match || res.Statement.Calls[1].Runtime.InterpreterPath != "/usr/bin/dash" {
		t.Fatalf("v0.2: %s %v", res.RunnerObservation, res.Errors)
	}
	o.Expected = []Expectation{{Name: "lint", InterpreterSHA256: strings.Repeat("f", 64)}}
	if res := Verify(v2, o); res.RunnerObservation != Match {
		t.Fatalf("expected interpreter: %s %v", res.RunnerObservation, res.Errors)
	}
	o.Expected = []Expectation{{Name: "lint", InterpreterSHA256: strings.Repeat("e", 64)}}
	if res := Verify(v2, o); res.RunnerObservation != Mismatch || !slices.Contains(res.ReasonCodes, CodeRuntimeDiffers) {
		t.Fatalf("swapped interpreter: %s %v", res.RunnerObservation, res.ReasonCodes)
	}

	tree, err := f.stmt.Tree()
	if err != nil {
		t.Fatal(err)
	}
	resign := func(edit func(st map[string]any)) []byte {
		raw, _ := jcs.Canonical(tree)
		v, _ := jcs.Parse(raw)
		st := v.(map[string]any)
		edit(st)
		payload, err := jcs.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := dsse.Sign(dsse.PayloadType, payload, witnessKey, "")
		return env
	}
	pred := func(st map[string]any) map[string]any { return st["predicate"].(map[string]any) }
	rt := func(st map[string]any, i int) map[string]any {
		return pred(st)["calls"].([]any)[i].(map[string]any)["runtime"].(map[string]any)
	}
	for name, tc := range map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"interpreter in v0.1": {func(st map[string]any) {
			st["predicateType"], pred(st)["schemaVersion"] = PredicateType, SchemaVersion
		}, "member of v0.2"},
		"v0.2 with the v0.1 schema": {func(st map[string]any) { pred(st)["schemaVersion"] = SchemaVersion }, "schemaVersion"},
		"interpreter of a builtin": {func(st map[string]any) {
			rt(st, 0)["interpreter"] = map[string]any{"path": "/bin/sh", "sha256": strings.Repeat("f", 64)}
		}, "does not belong"},
		"relative path":  {func(st map[string]any) { rt(st, 1)["interpreter"].(map[string]any)["path"] = "sh" }, "absolute"},
		"short digest":   {func(st map[string]any) { rt(st, 1)["interpreter"].(map[string]any)["sha256"] = "ff" }, "hex"},
		"extra member":   {func(st map[string]any) { rt(st, 1)["interpreter"].(map[string]any)["args"] = "-e" }, "unknown member"},
		"unknown v0.3":   {func(st map[string]any) { st["predicateType"] = strings.Replace(PredicateTypeV02, "v0.2", "v0.3", 1) }, "predicateType"},
		"missing sha256": {func(st map[string]any) { delete(rt(st, 1)["interpreter"].(map[string]any), "sha256") }, "sha256"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(resign(tc.edit)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func mustPayload(t *testing.T, env []byte) []byte {
	t.Helper()
	v, err := jcs.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	op, err := dsse.Open(v)
	if err != nil {
		t.Fatal(err)
	}
	return op.Payload
}
