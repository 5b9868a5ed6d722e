// Package pdp is lensgate's policy decision point. Every write the publisher proposes is
// authorised or denied here, with a reason, before it reaches GitHub, and every decision is
// written as a hash-chained audit record. Merging, pushing, deleting branches, approving,
// closing, labels outside the triage list and body edits outside the disclosure block are
// never allowed, whatever a runtime answered.
package pdp

import "strings"

// Kind names a proposed write.
type Kind string

// Kinds lensgate may perform when the policy allows them.
const (
	KindCheckRunCreate Kind = "check_run.create"
	KindCheckRunUpdate Kind = "check_run.update"
	KindCommentUpsert  Kind = "comment.upsert"
	// KindCommentDedupe deletes a second advisory comment of the App's own, left by two runs
	// that raced to create it; the oldest stays and is updated.
	KindCommentDedupe Kind = "comment.dedupe"
	KindReviewCreate  Kind = "review.create"
	KindReactionAdd   Kind = "reaction.add"
	KindLabelsAdd     Kind = "labels.add"
	KindDisclosure    Kind = "body.disclosure"
	// KindDelegateRequest posts the comment that asks another review bot for a review of one
	// head, with lensgate's binding marker; KindReviewersRequest asks through the
	// requested-reviewers API.
	KindDelegateRequest  Kind = "delegate.request"
	KindReviewersRequest Kind = "reviewers.request"
	// KindCommentReply answers a command comment in the conversation (a refused or accepted
	// dismissal).
	KindCommentReply Kind = "comment.reply"
	// KindThreadReply replies in one of the App's review threads ("fixed in", "dismissed").
	KindThreadReply Kind = "review.reply"
	// KindThreadResolve resolves one of the App's review threads whose finding is closed.
	KindThreadResolve Kind = "review.resolve"
)

// Kinds that are always denied. They exist so that a proposal to do them is named, denied and
// audited rather than silently dropped.
const (
	KindMerge        Kind = "merge"
	KindPush         Kind = "push"
	KindBranchDelete Kind = "branch.delete"
	KindApprove      Kind = "approve"
	KindClose        Kind = "close"
	KindBodyEdit     Kind = "body.edit" // a body edit that is not confined to the disclosure block
	KindUnknown      Kind = "unknown"
)

var allowList = map[Kind]bool{
	KindCheckRunCreate: true, KindCheckRunUpdate: true, KindCommentUpsert: true, KindCommentDedupe: true, KindReviewCreate: true,
	KindReactionAdd: true, KindLabelsAdd: true, KindDisclosure: true, KindDelegateRequest: true, KindReviewersRequest: true,
	KindCommentReply: true, KindThreadReply: true, KindThreadResolve: true,
}

var forbidden = map[Kind]bool{
	KindMerge: true, KindPush: true, KindBranchDelete: true, KindApprove: true, KindClose: true, KindBodyEdit: true,
}

// ParseKind maps an action name, as a runtime or an operator might spell it, to a Kind. Names
// that match nothing become KindUnknown, which is denied.
func ParseKind(name string) Kind {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.NewReplacer("-", "_", " ", "_").Replace(n)
	switch n {
	case "merge", "auto_merge", "automerge", "enable_auto_merge":
		return KindMerge
	case "push", "force_push", "commit":
		return KindPush
	case "delete_branch", "branch_delete", "branch.delete":
		return KindBranchDelete
	case "approve", "approve_pr", "approval":
		return KindApprove
	case "close", "close_without_comment", "close_pr", "close_issue":
		return KindClose
	case "edit_body", "body_edit", "body.edit":
		return KindBodyEdit
	}
	for k := range allowList {
		if n == string(k) || n == strings.ReplaceAll(string(k), ".", "_") {
			return k
		}
	}
	return KindUnknown
}

// Review events as GitHub names them.
const (
	EventComment        = "COMMENT"
	EventRequestChanges = "REQUEST_CHANGES"
	EventApprove        = "APPROVE"
)

// Action is one proposed write.
type Action struct {
	Kind Kind
	// Repo is "owner/name"; Number the pull request or issue; HeadSHA the reviewed head.
	Repo    string
	Number  int
	HeadSHA string
	// Target names the object written (a check run name, "advisory-comment", "review",
	// "body"). Repeated writes to one target (a retry, an annotation batch) are one action
	// against the per-run action cap, but each is a write against the write cap.
	Target string
	// Lenses are the lenses whose results this write publishes; each must have a publication
	// mode that permits this kind of write.
	Lenses []string
	// ReviewEvent is COMMENT, REQUEST_CHANGES or APPROVE for KindReviewCreate.
	ReviewEvent string
	// Labels for KindLabelsAdd.
	Labels []string
	// Reaction content for KindReactionAdd.
	Reaction string
	// BodyBefore is the body as last read, BodyAfter the body to write, for KindDisclosure.
	BodyBefore string
	BodyAfter  string
	// Source says who proposed the action ("publisher", "runtime:<name>").
	Source string
	// Tokens is the model spend of the run, recorded with the write that concludes its gate.
	Tokens *Tokens
}
