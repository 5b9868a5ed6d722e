package disclosure

import (
	"testing"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

func TestTruthyFollowsTheReference(t *testing.T) {
	tests := []struct {
		v    any
		want bool
	}{
		{nil, false}, {false, false}, {true, true}, {"", false}, {"x", true},
		{[]any{}, false}, {[]any{nil}, true}, {map[string]any{}, false}, {map[string]any{"a": nil}, true},
		{jcs.Number("0"), false}, {jcs.Number("-0"), false}, {jcs.Number("0.0"), false}, {jcs.Number("0e5"), false},
		{jcs.Number("1e-400"), false}, {jcs.Number("7"), true}, {jcs.Number("0.5"), true},
		{jcs.Number("100000000000000000000000"), true},
	}
	for _, tt := range tests {
		if got := truthy(tt.v); got != tt.want {
			t.Errorf("truthy(%#v) = %v", tt.v, got)
		}
	}
}

func TestTimestampForms(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-11-29T18:00:00Z": true, "2026-11-29T18:00:00.123Z": true, "2026-13-99T99:99:99Z": true,
		"2026-11-29T18:00:00": false, "2026-11-29T18:00:00+00:00": false, "2026-11-29 18:00:00Z": false,
		"2026-11-29T18:00:00.Z": false, "\u0662026-11-29T18:00:00Z": true, // Arabic-Indic digit, as \d in the reference
	} {
		if got := isTimestamp(s); got != want {
			t.Errorf("isTimestamp(%q) = %v", s, got)
		}
	}
}
