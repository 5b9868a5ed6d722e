package details

// Context is the context manifest of the review's model calls as the page lists it: every
// instruction file, range of code and linked issue the models were given besides the diff,
// each with its digest, and the manifest's digest, which the signed receipt's review runs bind
// (evidenceRef). A long code list is cut to fit the record; CodeTotal keeps the count.
type Context struct {
	Digest       string         `json:"digest"`
	Instructions []ContextFile  `json:"instructions,omitempty"`
	Code         []ContextCode  `json:"code,omitempty"`
	CodeTotal    int            `json:"codeTotal,omitempty"`
	Issues       []ContextIssue `json:"issues,omitempty"`
	// Changed are instruction files the pull request changes (their base versions were used).
	Changed []string `json:"changed,omitempty"`
}

// ContextFile is one instruction file read from a trusted revision.
type ContextFile struct {
	Path       string `json:"path"`
	Repository string `json:"repository,omitempty"`
	Commit     string `json:"commit"`
	SHA256     string `json:"sha256"`
}

// ContextCode is one range of lines of a changed file at the head.
type ContextCode struct {
	Path   string `json:"path"`
	Lines  string `json:"lines"`
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256"`
}

// ContextIssue is one linked issue.
type ContextIssue struct {
	Number int    `json:"number"`
	SHA256 string `json:"sha256"`
}

// Bounds of the context in a record.
const (
	maxRecordContextFiles = 64
	maxRecordContextCode  = 100
)

// boundContext cuts the context's lists and texts to the record's bounds.
func boundContext(c *Context) {
	if c == nil {
		return
	}
	c.CodeTotal = max(c.CodeTotal, len(c.Code))
	c.Instructions = c.Instructions[:min(len(c.Instructions), maxRecordContextFiles)]
	for i := range c.Instructions {
		f := &c.Instructions[i]
		f.Path, f.Repository, f.Commit, f.SHA256 = cut(f.Path, 300), cut(f.Repository, 200), cut(f.Commit, 64), cut(f.SHA256, 64)
	}
	c.Code = c.Code[:min(len(c.Code), maxRecordContextCode)]
	for i := range c.Code {
		s := &c.Code[i]
		s.Path, s.Lines, s.Kind, s.SHA256 = cut(s.Path, 300), cut(s.Lines, 32), cut(s.Kind, 32), cut(s.SHA256, 64)
	}
	c.Changed = cutList(c.Changed)
	c.Digest = cut(c.Digest, 64)
}
