package observation

import (
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// The reader's errors name the place of the offending member, down to nested list entries.
func TestParseErrorsNameThePlace(t *testing.T) {
	f := newFixture(t, nil)
	tree, err := f.stmt.Tree()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := jcs.Canonical(tree)
	obj := func(v any, path ...any) map[string]any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v.(map[string]any)
	}
	for _, tc := range []struct {
		edit func(st map[string]any)
		want string
	}{
		{func(st map[string]any) {
			obj(st, "predicate", "calls", 1, "exchanges", 0, "response")["sha256"] = "x"
		}, "observation: calls[1].exchanges[0].response.sha256 must be 64 lowercase hex characters"},
		{func(st map[string]any) { obj(st, "predicate", "calls", 1, "exchanges", 0)["x"] = true },
			`observation: calls[1].exchanges[0]: unknown member "x"`},
		{func(st map[string]any) { obj(st, "predicate", "calls", 0, "runtime")["kind"] = "magic" },
			"observation: calls[0].runtime.kind must be builtin, exec, openai or other"},
		{func(st map[string]any) { obj(st, "predicate", "calls", 2, "outcomes", 0)["outcome"] = "maybe" },
			"observation: calls[2].outcomes[0].outcome must be passed, failed or pending"},
		{func(st map[string]any) { obj(st, "predicate", "calls", 1, "tokens")["input"] = jcs.Number("-1") },
			"observation: calls[1].tokens.input must be an integer from 0 to 9007199254740991"},
		{func(st map[string]any) { obj(st, "predicate", "calls", 0, "files")["count"] = jcs.Number("1.5") },
			"observation: calls[0].files.count must be an integer"},
		{func(st map[string]any) { obj(st, "predicate", "findings", "listed", 1)["severity"] = "urgent" },
			`observation: findings.listed[1].severity "urgent" is not critical, high, medium, low or info`},
		{func(st map[string]any) { obj(st, "predicate", "binds", "receipt")["sha256"] = "x" },
			"observation: binds.receipt.sha256 must be 64 lowercase hex characters"},
	} {
		v, _ := jcs.Parse(raw)
		st := v.(map[string]any)
		tc.edit(st)
		payload, err := jcs.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := dsse.Sign(dsse.PayloadType, payload, witnessKey, "")
		if _, err := Parse(env); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// parseTime takes exactly the strings that time.Parse takes and formats back unchanged.
func TestParseTimeIsTheRoundTrip(t *testing.T) {
	roundTrip := func(s string) bool {
		tm, err := time.Parse(TimeLayout, s)
		return err == nil && tm.Format(TimeLayout) == s
	}
	for _, s := range []string{
		"2026-12-01T10:00:00.123456789Z", "0000-01-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z",
		"2026-12-01T1:00:00.123456789Z", "2026-12-01T10:00:00.12345678Z", "2026-12-01T10:00:00.1234567890Z",
		"2026-02-29T10:00:00.000000000Z", "2024-02-29T10:00:00.000000000Z", "2026-13-01T10:00:00.000000000Z",
		"2026-12-01T24:00:00.000000000Z", "2026-12-01T10:60:00.000000000Z", "2026-12-01T10:00:60.000000000Z",
		"2026-12-01 10:00:00.000000000Z", "2026-12-01T10:00:00.000000000z", "2026-12-01T10:00:00.000000000+00:00",
		"+026-12-01T10:00:00.000000000Z", "2026-1a-01T10:00:00.000000000Z", "2026-12-01T10:00:00,000000000Z",
		"2026-00-01T10:00:00.000000000Z", "2026-12-00T10:00:00.000000000Z", "2026-12-01T10:00:00Z", "",
		"2026-12-01T10:00:00.00000000٣Z", "2026-12-01T-1:00:00.000000000Z",
	} {
		if _, ok := parseTime(s); ok != roundTrip(s) {
			t.Errorf("parseTime(%q) = %v, the round trip says %v", s, ok, !ok)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	f.Add("2026-12-01T10:00:00.123456789Z")
	f.Add("2026-12-01T1:00:00.123456789Z")
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := time.Parse(TimeLayout, s)
		want := err == nil && tm.Format(TimeLayout) == s
		if got, ok := parseTime(s); ok != want || ok && !got.Equal(tm) {
			t.Fatalf("parseTime(%q) = %v, %v; the round trip says %v", s, got, ok, want)
		}
	})
}

// A report shows each runtime's identity and the times exactly as the statement wrote them.
func TestReportShowsTheStatementsText(t *testing.T) {
	f := newFixture(t, nil)
	exit := 3
	f.stmt.Calls[1].Runtime.ExitStatus = &exit
	f.stmt.Calls[1].Runtime.InterpreterPath = "/bin/sh"
	f.stmt.Calls[1].Runtime.InterpreterSHA256 = strings.Repeat("f", 64)
	res := Verify(f.sign(t, witnessKey), opts(f))
	if res.RunnerObservation != Match {
		t.Fatalf("%s %v", res.RunnerObservation, res.Errors)
	}
	if res.WindowStarted != "2026-12-01T10:00:00.123456789Z" || res.WindowFinished != "2026-12-01T10:00:03.123456789Z" {
		t.Fatalf("window %s .. %s", res.WindowStarted, res.WindowFinished)
	}
	want := []CallSummary{
		{Identity: "lensgate test, binary sha256:" + strings.Repeat("1", 64), Started: "2026-12-01T10:00:00.123456789Z", Finished: "2026-12-01T10:00:01.123456789Z"},
		{Identity: "adapter lint, executable sha256:" + strings.Repeat("6", 64) + ", interpreter /bin/sh sha256:" + strings.Repeat("f", 64) + ", exit status 3",
			Started: "2026-12-01T10:00:01.123456789Z", Finished: "2026-12-01T10:00:02.623456789Z"},
		{Identity: "endpoint 127.0.0.1:1, model requested m, model answered m-2", Started: "2026-12-01T10:00:02.123456789Z", Finished: "2026-12-01T10:00:03.123456789Z"},
	}
	for i, w := range want {
		if c := res.Calls[i]; c.Identity != w.Identity || c.Started != w.Started || c.Finished != w.Finished {
			t.Errorf("calls[%d]: %+v, want %+v", i, c, w)
		}
	}
	for rt, want := range map[*Runtime]string{
		{Kind: KindExec, Name: "x", ExecutableSHA256: "e"}:         "adapter x, executable sha256:e, no exit status",
		{Kind: KindOpenAI, EndpointHost: "h", ModelRequested: "m"}: "endpoint h, model requested m",
		{Kind: KindOther, Name: "n", Version: "1"}:                 "other n, 1",
		{Kind: KindOther, Name: "n"}:                               "other n",
	} {
		if got := rt.Describe(); got != want {
			t.Errorf("Describe() = %q, want %q", got, want)
		}
	}
}

// The payload is read with jcs.Objects: a duplicate key anywhere, invalid UTF-8, an integer
// beyond the bounds and a non-canonical layout are refused as before.
func TestPayloadRefusals(t *testing.T) {
	f := newFixture(t, nil)
	tree, err := f.stmt.Tree()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := jcs.Canonical(tree)
	sign := func(payload string) []byte {
		env, _ := dsse.Sign(dsse.PayloadType, []byte(payload), witnessKey, "")
		return env
	}
	good := string(raw)
	for name, tc := range map[string]struct{ payload, want string }{
		"duplicate nested key": {strings.Replace(good, `"size":10}`, `"size":10,"sha256":"x"}`, 1), "duplicate object key"},
		"duplicate top key":    {strings.Replace(good, `{"_type":`, `{"_type":"x","_type":`, 1), "duplicate object key"},
		"invalid UTF-8":        {strings.Replace(good, `"lint"`, "\"li\xffnt\"", 1), "not valid UTF-8"},
		"big integer":          {strings.Replace(good, `"size":10}`, `"size":99999999999999999999}`, 1), "RFC 8785"},
		"integer out of range": {strings.Replace(good, `"size":10}`, `"size":9007199254740992}`, 1), "RFC 8785"},
		"fraction":             {strings.Replace(good, `"size":10}`, `"size":10.5}`, 1), "must be an integer"},
		"whitespace":           {strings.Replace(good, `"size":10}`, `"size": 10}`, 1), "RFC 8785"},
		"keys out of order":    {strings.Replace(good, `{"_type":"https://in-toto.io/Statement/v1",`, `{"zz":1,"_type":"https://in-toto.io/Statement/v1",`, 1), "RFC 8785"},
		"unknown member":       {strings.Replace(good, `"size":10}`, `"size":10,"tz":1}`, 1), `unknown member "tz"`},
	} {
		if tc.payload == good {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if _, err := Parse(sign(tc.payload)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
}
