package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldFormat lower-cases a --format value as Python's str.lower does, which YAGA matches the
// value after. It differs from strings.ToLower where Python applies the full lower-case mapping
// of Unicode's SpecialCasing: U+0130 (İ) becomes "i" followed by U+0307, so "gİthub" is not
// "github", and a capital sigma at the end of a word becomes a final sigma.
func FoldFormat(s string) Format {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return Format(b.String())
}

// finalSigma reports Unicode's Final_Sigma condition for the sigma at byte i of s: a cased
// letter before it and none after it, skipping case-ignorable characters on both sides.
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

func caseIgnorable(r rune) bool {
	switch r {
	// Word_Break MidLetter, MidNumLet and Single_Quote; the other case-ignorable characters are
	// the categories below.
	case '\'', '.', ':', '·', '\u0387', '\u055f', '\u05f4', '\u2018', '\u2019', '\u2024', '\u2027', '\ufe13', '\ufe52', '\ufe55', '\uff07', '\uff0e', '\uff1a':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
