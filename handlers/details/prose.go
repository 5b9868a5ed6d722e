package details

// Bounds of the prose a record carries: small beside the findings, which share the record's
// 16 KiB (the advisory comment and the reply hold the whole text).
const (
	maxRecordProse      = 4
	maxRecordProseBytes = 800
)

// Prose is a text a model wrote beside the review of a head: the walkthrough or the answer to a
// reviewer's question, with what it cost. It is not a finding and never affects the gate; its
// text is untrusted model output.
type Prose struct {
	Kind string `json:"kind"` // "walkthrough" or "ask"
	// Asker and Question name who asked what (for an answer).
	Asker    string  `json:"asker,omitempty"`
	Question string  `json:"question,omitempty"`
	Model    string  `json:"model,omitempty"`
	Text     string  `json:"text,omitempty"`
	Tokens   *Tokens `json:"tokens,omitempty"`
}

// boundProse keeps a record's prose within its bounds.
func boundProse(ps []Prose) []Prose {
	ps = ps[:min(len(ps), maxRecordProse)]
	for i := range ps {
		p := &ps[i]
		p.Kind, p.Asker, p.Model = cut(p.Kind, 32), cut(p.Asker, 64), cut(p.Model, 128)
		p.Question, p.Text = cut(p.Question, 300), cut(p.Text, maxRecordProseBytes)
	}
	return ps
}
