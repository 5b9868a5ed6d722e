package publish

import (
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/review"
)

// recordContext is the decision's context manifest as the details record lists it (nil when
// the model calls were given nothing besides the diff and no instruction file changed).
func recordContext(d *review.Decision) *details.Context {
	if d.Context == nil && len(d.ChangedInstructions) == 0 {
		return nil
	}
	c := &details.Context{Digest: d.ContextDigest, Changed: d.ChangedInstructions}
	if m := d.Context; m != nil {
		for _, f := range m.Instructions {
			c.Instructions = append(c.Instructions, details.ContextFile{Path: f.Path, Repository: f.Repository, Commit: f.Commit, SHA256: f.SHA256})
		}
		for _, s := range m.Code {
			c.Code = append(c.Code, details.ContextCode{Path: s.Path, Lines: s.Lines, Kind: s.Kind, SHA256: s.SHA256})
		}
		c.CodeTotal = len(m.Code)
		for _, is := range m.Issues {
			c.Issues = append(c.Issues, details.ContextIssue{Number: is.Number, SHA256: is.SHA256})
		}
	}
	return c
}
