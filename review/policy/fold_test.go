package policy

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"

	"github.com/lensgate/lensgate/config/pyoracle"
)

// TestFoldFormat: --format values fold as Python's str.lower does, so only a value Python
// lower-cases to a format name selects it.
func TestFoldFormat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"JSON", "json"},
		{"GitHub", "github"},
		{"TeXt", "text"},
		{"gİthub", "gi\u0307thub"}, // strings.ToLower gives "github"
		{"GİTHUB", "gi\u0307thub"},
		{"ΑΣ", "ας"},
		{"ΑΣ.", "ας."},
		{"ΑΣΑ", "ασα"},
		{"Σ", "σ"},
		{"Α'Σ'", "α'ς'"},
		{"\u212a", "k"}, // Kelvin sign: both Python and Go give k
	}
	for _, tt := range tests {
		if got := string(FoldFormat(tt.in)); got != tt.want {
			t.Errorf("FoldFormat(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := ParseFormat("gİthub", FormatText, FormatJSON, FormatGitHub); err == nil {
		t.Error("gİthub accepted as github")
	}
	if f, err := ParseFormat("GITHUB", FormatText, FormatJSON, FormatGitHub); err != nil || f != FormatGitHub {
		t.Errorf("GITHUB: %v %v", f, err)
	}
}

// TestFoldFormatAgainstPython: every code point Python's Unicode tables assign, and words that
// exercise the final-sigma rule, fold as str.lower folds them.
func TestFoldFormatAgainstPython(t *testing.T) {
	o := pyoracle.Start(t)
	all := o.Ask(t, map[string]any{"op": "lower-all"})
	var changed map[string]string
	if err := json.Unmarshal(all.Value, &changed); err != nil {
		t.Fatal(err)
	}
	unassigned := map[int]bool{}
	for _, cp := range all.Unassigned {
		unassigned[cp] = true
	}
	compared, before, after := 0, 0, 0
	for cp := rune(0); cp <= unicode.MaxRune; cp++ {
		if utf16.IsSurrogate(cp) || unassigned[int(cp)] {
			continue
		}
		compared++
		want, ok := changed[strconv.Itoa(int(cp))]
		if !ok {
			want = string(cp)
		}
		if strings.ToLower(string(cp)) != want {
			before++
		}
		if got := string(FoldFormat(string(cp))); got != want {
			after++
			if after <= 10 {
				t.Errorf("U+%04X: FoldFormat %q, Python %q", cp, got, want)
			}
		}
	}
	words := []string{"ΑΣ", "ΑΣ.", "ΑΣΑ", "Σ", "Α'Σ'", "ΑΣ'Α", "Α\u0301Σ", "ΑΣ\u0301", "ΑΣ Σ", "1Σ", "ΌΣΟΣ", "gİthub", "JSON", "Text"}
	// Random words around the sigma: letters, marks, format and modifier characters, the
	// Word_Break quotes and stops, digits and spaces.
	alphabet := []rune("ΣΑαaA1 .:'\u0301\u0345\u00ad\u02b0\u0387\u2019\u00b7İ\u1f88\u2160ª")
	r := rand.New(rand.NewPCG(15, 5))
	for range 3000 {
		w := make([]rune, 1+r.IntN(6))
		for i := range w {
			w[i] = alphabet[r.IntN(len(alphabet))]
		}
		words = append(words, string(w))
	}
	lower := o.Ask(t, map[string]any{"op": "lower", "strings": words})
	var want []string
	if err := json.Unmarshal(lower.Value, &want); err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		if got := string(FoldFormat(w)); got != want[i] {
			t.Errorf("%q: FoldFormat %q, Python %q", w, got, want[i])
		}
	}
	t.Logf("%d code points compared with Python %s str.lower: strings.ToLower differs on %d, FoldFormat on %d; %d words", compared, all.Unicode, before, after, len(words))
}
