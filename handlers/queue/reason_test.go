package queue

import "testing"

func TestForcesRerun(t *testing.T) {
	cases := map[Reason]bool{
		"check_run.rerequested": true, "check_suite.rerequested": true, "pull_request.edited": true,
		"issues.edited": true, "issue_comment.created": true, "delegate.recheck": true, "delegate.pull_request_review.submitted": true, "pull_request.synchronize": false,
		"pull_request.reopened": false, "pull_request.ready_for_review": false, "check_suite.requested": false, "pull_request.opened": false, "": false,
	}
	for reason, want := range cases {
		if got := reason.ForcesRerun(); got != want {
			t.Errorf("ForcesRerun(%q) = %v, want %v", reason, got, want)
		}
	}
}

