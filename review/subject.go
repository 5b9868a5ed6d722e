// Package review turns a pull request (or an issue) into named-lens outcomes, findings and a
// gate decision. It knows nothing of GitHub: callers hand it a Subject snapshot and a decoded
// repository configuration, and get back a Decision that a publisher renders.
package review

import (
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/runtime"
)

// Subject kinds.
const (
	KindPullRequest = "pull_request"
	KindIssue       = "issue"
)

// File statuses, in GitHub's vocabulary.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileRemoved  = "removed"
	FileRenamed  = "renamed"
	FileCopied   = "copied"
)

// Subject is everything the pipeline needs to know about one pull request or issue. Every
// string in it except the identifiers is untrusted: it is data to review, never instructions.
type Subject struct {
	Kind string // KindPullRequest or KindIssue

	Owner  string
	Repo   string
	Number int
	// InstallationID is the GitHub App installation the review runs for (0 locally); the
	// daily token allowance is counted per installation.
	InstallationID int64

	// RepositoryNodeID and NodeID are the forge's global ids of the repository and of the
	// pull request (or issue); they bind a receipt to its subject.
	RepositoryNodeID string
	NodeID           string

	Title       string
	Body        string
	Author      string
	AuthorIsBot bool
	Draft       bool

	BaseRef string
	HeadRef string
	BaseSHA string
	HeadSHA string

	Labels  []string
	Commits []Commit
	Files   []File

	// Diff holds the exact unified diff bytes that are reviewed; ReviewedDiffDigest is the
	// SHA-256 of these bytes.
	Diff []byte

	// OpenPRsByAuthor is the author's number of open pull requests in the repository, or -1
	// when it is unknown (the open-PR cap is then not checked).
	OpenPRsByAuthor int

	// UnlistedFiles counts changed files the forge did not list (GitHub lists at most 3,000
	// files of a pull request); they are coverage gaps.
	UnlistedFiles int
	// UnlistedPaths names them when the caller could (each becomes a gap of its own).
	UnlistedPaths []string

	// Prior is the state the last review of this pull request left (nil: none, or unreadable).
	Prior *State
	// Since holds the changes from Prior's head to HeadSHA, when that head is an ancestor of
	// HeadSHA (nil otherwise: a force-push, or no prior review).
	Since *Increment
	// Settled marks a review of a head that runs only because a delegated lens settled (the
	// bot answered, or its wait ended) or a pull request review may have changed code-owner
	// approval: paid lenses recorded in Prior for this very head are then reused instead of
	// sent to the model again.
	Settled bool
	// Dismissals are the accepted dismissals of findings, from people with write access.
	Dismissals []Dismissal
	// Questions are the reviewers' questions this review answers (see Decision.Answers).
	Questions []Question
	// OwnerApproval is what the forge shows of code-owner approval of the changed protected
	// files, read when protected_paths_require asks for it (nil: not read).
	OwnerApproval *OwnerApproval

	// Local marks a subject built from a local git repository rather than a forge. It has no
	// labels, body checkbox or open pull requests, so intake skips the checks that need them.
	Local bool

	// Delegation is what the App observed for lenses delegated to another review bot (its
	// requests and the bots' answers); nil outside the App.
	Delegation *runtime.Delegation

	// ContextSources says where model lenses' context is read (the base branch's instruction
	// files, the head's code, linked issues); nil gives them the diff alone.
	ContextSources *modelctx.Sources
}

// Commit is one commit of a pull request.
type Commit struct {
	SHA     string
	Message string
}

// File is one changed file of a pull request.
type File struct {
	Path         string
	PreviousPath string // set for renames and copies
	Status       string // one of the File* statuses
	Additions    int
	Deletions    int
	// Patch is the file's own hunks (GitHub's per-file patch field). Optional when Diff is set.
	Patch  string
	Binary bool
	// SizeBytes is the size of the file at the head revision, or 0 when unknown or removed.
	SizeBytes int64
	// BlobSHA is the git blob SHA of the file at the head, when the forge reported it.
	BlobSHA string
	// HeadContent is the whole file at the head revision, optional. Callers fill it for
	// changed CI workflows (runtime.IsWorkflowPath, at most runtime.MaxHeadContentBytes): a
	// workflow's trigger and its risky step are often far apart, and the diff hunks alone
	// would hide one of them. Like the diff, it is untrusted data.
	HeadContent []byte
}

// IsPullRequest reports whether the subject is a pull request.
func (s *Subject) IsPullRequest() bool { return s.Kind == KindPullRequest }

// Increment is what changed between an earlier reviewed head and the current head.
type Increment struct {
	// From is the earlier head (a full SHA).
	From string
	// Files are the files the compare of From and the head lists, with their patches.
	Files []File
	// Diff is the compare's unified diff; when empty it is assembled from Files.
	Diff []byte
	// Truncated is set when the compare did not list every changed file; the review is then
	// a full one.
	Truncated bool
}

// Dismissal is one accepted request to dismiss a finding.
type Dismissal struct {
	ID     string
	Reason string
	By     string
}

// reviewedDiff is the diff a review of s reads: Diff, or one built from the files' patches when
// the forge gave no full diff.
func (s *Subject) reviewedDiff() []byte {
	if len(s.Diff) > 0 {
		return s.Diff
	}
	return patchesToDiff(s.Files)
}

// Context is what a decision about s binds: the same for a reviewed decision and for one the
// caller synthesises without a review (an invalid configuration, an outage). The body core is
// that of the prepared body (disclosure.PrepareBody), which is the body the publisher signs and
// splices; a body whose markers are ambiguous binds none.
func (s *Subject) Context() SubjectContext {
	sc := SubjectContext{
		Kind: s.Kind, Owner: s.Owner, Repo: s.Repo, Number: s.Number,
		RepositoryNodeID: s.RepositoryNodeID, NodeID: s.NodeID, HeadSHA: s.HeadSHA,
		BaseSHA: s.BaseSHA, ReviewedDiffDigest: digest.SHA256Hex(s.reviewedDiff()),
	}
	if prepared, err := disclosure.PrepareBody(s.Body); err == nil {
		if d, err := disclosure.BodyCoreDigest(prepared); err == nil {
			sc.BodyCoreDigest = d
		}
	}
	return sc
}
