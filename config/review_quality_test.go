package config

import (
	"strings"
	"testing"
)

func TestReviewQualityKeys(t *testing.T) {
	r, err := ParseRepo(".asdd.yml", []byte("review:\n  verify: model\n  min_inline_severity: block\n  max_inline_comments: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	q := r.Review.Quality
	if q.VerifyMode() != VerifyModel || q.MinInlineRank() != 3 || q.InlineCap() != 3 {
		t.Fatalf("decoded %+v", q)
	}
	def := DefaultRepo().Review.Quality
	if def.VerifyMode() != VerifyDeterministic || def.MinInlineRank() != 2 || def.InlineCap() != 10 {
		t.Fatalf("defaults %+v", def)
	}
	for _, bad := range []string{"review:\n  verify: strict\n", "review:\n  min_inline_severity: info\n", "review:\n  max_inline_comments: 31\n"} {
		_, err := ParseRepo(".asdd.yml", []byte(bad))
		if err == nil || !strings.Contains(err.Error(), "review.") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
