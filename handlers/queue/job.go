package queue

import (
	"encoding/json"
	"fmt"
	"time"
)

// Extra is what a job carries in Job.Extra (JSON), for the worker and the publisher.
type Extra struct {
	// DefaultBranch is where an issue's configuration is read.
	DefaultBranch string `json:"default_branch,omitempty"`
	// RepositoryNodeID binds an issue subject (the issue API does not return its repository).
	RepositoryNodeID string `json:"repository_node_id,omitempty"`
	// RequestedBy is the user whose comment command asked for the review.
	RequestedBy string `json:"requested_by,omitempty"`
	// ApprovedBy is the user whose approve-delegate command, from someone with write access,
	// approves asking another review bot for the head. Nothing else approves.
	ApprovedBy string `json:"approved_by,omitempty"`
	// CommentID is the comment carrying the command, for a reaction.
	CommentID int64 `json:"comment_id,omitempty"`
	// CheckRunID is the check run whose re-run was requested.
	CheckRunID int64 `json:"check_run_id,omitempty"`
	// Recheck counts the scheduled looks for a delegated answer.
	Recheck int `json:"recheck,omitempty"`
	// UpdatedAt and BodyDigest are the pull request's updated_at and body digest as the event
	// showed them: the worker does not act on a read that is older (GitHub's replicas lag).
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	BodyDigest string    `json:"body_digest,omitempty"`
}

// Raw encodes x for queue.Job.Extra (nil when empty).
func (x Extra) Raw() json.RawMessage {
	b, _ := json.Marshal(x)
	if string(b) == "{}" {
		return nil
	}
	return b
}

// ParseExtra decodes a job's Extra (unknown or malformed fields are ignored).
func ParseExtra(raw json.RawMessage) Extra {
	var x Extra
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &x)
	}
	return x
}

// Key is the coalescing key of a pull request or issue.
func Key(owner, repo string, number int) string {
	return fmt.Sprintf("%s/%s#%d", owner, repo, number)
}

// EvidenceDelivery is the delivery id of the review that follows a bot's answer: the webhook of
// the answer and a later look at it name the same answer, so it is reviewed once.
func EvidenceDelivery(owner, repo string, number int, kind string, id int64) string {
	return fmt.Sprintf("delegate/%s/%s#%d/%s/%d", owner, repo, number, kind, id)
}

// AnswerJob is the review that follows a bot's answer (a comment or a review) on a pull request at head. An
// answer is never news of a head, so the job is a follow-up: it must not supersede a newer head's
// review.
func AnswerJob(inst int64, owner, repo string, number int, head string, kind string, id int64, reason Reason) Job {
	return Job{
		Key:            Key(owner, repo, number),
		DeliveryID:     EvidenceDelivery(owner, repo, number, kind, id),
		Kind:           KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           repo,
		Number:         number,
		HeadSHA:        head,
		Reason:         DelegateReason(reason),
		FollowUp:       true,
	}
}
