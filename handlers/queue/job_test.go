package queue

import "testing"

func TestExtraRoundTrip(t *testing.T) {
	if raw := (Extra{}).Raw(); raw != nil {
		t.Fatalf("empty extra encodes as %s, want nothing", raw)
	}
	x := Extra{RequestedBy: "octocat", CommentID: 7, Recheck: 2}
	if got := ParseExtra(x.Raw()); got != x {
		t.Fatalf("round trip %+v, want %+v", got, x)
	}
	if got := ParseExtra([]byte("{not json")); got != (Extra{}) {
		t.Fatalf("malformed extra parses as %+v, want zero", got)
	}
}

func TestAnswerJobIsAFollowUpOfItsHead(t *testing.T) {
	j := AnswerJob(5, "o", "r", 3, "abc", "comment", 9, "issue_comment.created")
	if j.Key != "o/r#3" || j.HeadSHA != "abc" || !j.FollowUp || !j.Reason.IsDelegate() || j.DeliveryID != "delegate/o/r#3/comment/9" {
		t.Fatalf("answer job %+v", j)
	}
}
