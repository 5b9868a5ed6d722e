package policy

import "testing"

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
