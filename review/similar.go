package review

import (
	"strings"
	"unicode"
)

// similarity is the word overlap of two texts (Jaccard index of their sets of lower-case words
// of two or more letters or digits), from 0 (nothing shared) to 1 (the same words). It is what
// "near-identical" means for findings: cheap, deterministic and blind to word order, which is
// enough for the short titles and messages of one lens; no library is needed for a set
// intersection.
func similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return 0
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(wa)+len(wb)-inter)
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 2 {
			out[w] = true
		}
	}
	return out
}
