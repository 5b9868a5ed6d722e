package delegate

import "testing"

func FuzzParseRequest(f *testing.F) {
	f.Add(RequestBody(Codex(), Binding{Preset: CodexPreset, Repo: tRepo, Number: tPR, Head: tHead, Base: tBase}))
	f.Add("<!-- lensgate-delegate:v1 preset=x -->")
	f.Fuzz(func(t *testing.T, body string) {
		b, err := ParseRequest(body)
		if err != nil {
			return
		}
		if again, err := ParseRequest(RequestBody(Codex(), b)); err != nil || again != b {
			t.Fatalf("round trip of %+v: %+v %v", b, again, err)
		}
	})
}

func FuzzCleanComment(f *testing.F) {
	f.Add(cleanBody(tHead))
	f.Add("Codex Review: Didn't find any major issues. \x00\n\n**Reviewed commit:** `" + tHead + "`")
	f.Fuzz(func(t *testing.T, body string) {
		if Codex().cleanComment(body, tHead) {
			if _, ok := oneReviewedCommit(normalize(body)); !ok {
				t.Fatalf("clean without one reviewed commit: %q", body)
			}
		}
	})
}
