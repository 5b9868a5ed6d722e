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

// Durable queues store reasons; the values the App writes must never change.
func TestReasonValuesAreStable(t *testing.T) {
	for r, want := range map[Reason]string{
		ReasonHeadShown: "pull_request.head_shown", ReasonBackfill: "installation.backfill",
		ReasonDetailsRerun: "details.rerun", ReasonApproveDelegate: "issue_comment.approve-delegate",
		ReasonCommentCommand: "issue_comment.created", ReasonCheckRunRerun: "check_run.rerequested",
		ReasonCheckSuiteRerun: "check_suite.rerequested", ReasonDelegateRecheck: "delegate.recheck",
		ReasonDelegateAnswered: "delegate.answered", ReasonDelegateTimeout: "delegate.timeout",
		EventReason("pull_request", "opened"):                           "pull_request.opened",
		DelegateReason(EventReason("pull_request_review", "submitted")): "delegate.pull_request_review.submitted",
	} {
		if string(r) != want {
			t.Errorf("reason %q, want %q", r, want)
		}
	}
	if !DelegateReason("issue_comment.created").IsDelegate() || ReasonCommentCommand.IsDelegate() {
		t.Error("IsDelegate does not tell the App's delegate reasons from webhook reasons")
	}
	if !ReasonCheckRunRerun.OpensCheckRun() || ReasonDelegateAnswered.OpensCheckRun() || EventReason("pull_request", "edited").OpensCheckRun() {
		t.Error("OpensCheckRun answers a re-run request only")
	}
}
