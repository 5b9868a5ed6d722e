package runtime

import "context"

// Candidate is a finding a model lens reported, given to a Verifier to confirm. Every field is
// the model's own output: untrusted data, like the diff.
type Candidate struct {
	// ID names the candidate in the answer (the finding's id).
	ID      string
	Lens    string
	Path    string
	Line    int
	Title   string
	Message string
}

// Confirmation is a Verifier's judgement of one candidate. Reason says why, in a sentence.
type Confirmation struct {
	ID        string
	Confirmed bool
	Reason    string
}

// Verifier is a runtime that can confirm candidate findings in a call of its own, independent
// of the call that reported them: it sees the change (req.Diff, the files of the candidates)
// and the candidates, never the lens instructions or the first answer's reasoning. The call
// takes its tokens from req.Budget and its slot from req.Slots like a review call. A candidate
// missing from the answer is not confirmed; an error means no candidate was judged.
type Verifier interface {
	Verify(ctx context.Context, req *Request, candidates []Candidate) ([]Confirmation, Call, error)
}
