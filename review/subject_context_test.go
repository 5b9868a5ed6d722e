package review

import (
	"context"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/digest"
)

// A decision the pipeline reaches and one a caller synthesises for the same subject (an invalid
// configuration, an outage) bind the same context: the diff the review reads (the patches when
// there is no full diff) and the core of the prepared body the publisher signs.
func TestSubjectContextIsTheReviewedOne(t *testing.T) {
	for _, subj := range []*Subject{prSubject(), func() *Subject {
		s := prSubject()
		s.Diff = nil
		s.Files = []File{{Path: "README.md", Status: FileModified, Additions: 1, Patch: "@@ -1 +1,2 @@\n # Hello\n+more"}}
		return s
	}()} {
		d, err := newTestPipeline().Review(context.Background(), subj, config.DefaultRepo())
		if err != nil {
			t.Fatal(err)
		}
		if got := subj.Context(); got != d.Subject {
			t.Fatalf("synthesised context %+v, reviewed %+v", got, d.Subject)
		}
		prepared, err := disclosure.PrepareBody(subj.Body)
		if err != nil {
			t.Fatal(err)
		}
		if core, _ := disclosure.BodyCoreDigest(prepared); core == "" || d.Subject.BodyCoreDigest != core {
			t.Fatalf("body core %q, want the prepared body's %q", d.Subject.BodyCoreDigest, core)
		}
		if d.Subject.ReviewedDiffDigest != digest.SHA256Hex(subj.reviewedDiff()) || len(subj.reviewedDiff()) == 0 {
			t.Fatal("reviewed diff digest is not the digest of the diff the review read")
		}
	}
}
