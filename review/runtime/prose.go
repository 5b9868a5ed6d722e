package runtime

import (
	"context"

	"github.com/lensgate/lensgate/review/modelctx"
)

// Kinds of prose a Writer is asked for.
const (
	// ProseWalkthrough is the walkthrough of a pull request: what it changes and why, and
	// where a reviewer should read first.
	ProseWalkthrough = "walkthrough"
	// ProseAnswer is the answer to a reviewer's question about a pull request.
	ProseAnswer = "ask"
)

// Writer is implemented by a runtime that writes prose about a change for its human
// reviewers: the walkthrough and answers to questions. What it writes is untrusted text that
// never affects a lens or the gate; the caller shows it fenced as such.
type Writer interface {
	Write(ctx context.Context, req *ProseRequest) (*Prose, error)
}

// ProseRequest is what a Writer gets. Everything but Kind, Lenses, Settings and MaxBytes is
// untrusted data.
type ProseRequest struct {
	Kind    string // ProseWalkthrough or ProseAnswer
	Subject Subject
	// Diff is the part of the change the model may see (the model lenses' view: excluded files
	// left out, secrets replaced).
	Diff    []byte
	Changed []Changed
	// Lenses are the lenses of the review with their fixed instructions, and Context what a
	// lens request for the same files is given besides the diff (the repository's rules,
	// linked issues, the code around the changes; nil when none): the context the lenses get.
	Lenses   []Lens
	Context  *modelctx.Context
	Settings Settings
	Budget   Budget
	Slots    Slots

	// Since and Previous, for a walkthrough, are the head an earlier walkthrough was written
	// at and its text: Diff then holds only the changes since that head.
	Since    string
	Previous string

	// Question is the question asked; Thread the earlier comments of its review thread, oldest
	// first; Path and Line the lines the thread is on (empty in the conversation).
	Question string
	Thread   []string
	Path     string
	Line     int

	// MaxBytes bounds the text of the answer.
	MaxBytes int
}

// Prose is a Writer's answer: the text, the model that wrote it and the call it took.
type Prose struct {
	Text  string
	Model string
	Call  Call
}
