package modelctx

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// Manifest says exactly what context the model calls of a review were given: every instruction
// file, every range of code and every linked issue, each with a digest a reader can recompute
// from the repository. It is the union over the review's calls.
type Manifest struct {
	Instructions []ManifestFile  `json:"instructions"`
	Code         []ManifestCode  `json:"code"`
	Issues       []ManifestIssue `json:"issues"`
}

// ManifestFile is one instruction file: `git show COMMIT:PATH | sha256sum` gives SHA256.
type ManifestFile struct {
	Path       string `json:"path"`
	Repository string `json:"repository,omitempty"`
	Commit     string `json:"commit"`
	SHA256     string `json:"sha256"`
	Size       int    `json:"size"`
	Section    string `json:"section,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// ManifestCode is one range of code: lines Start..End of PATH at COMMIT hash to SHA256
// (`git show COMMIT:PATH | sed -n 'START,ENDp' | sha256sum`).
type ManifestCode struct {
	Path   string `json:"path"`
	Commit string `json:"commit"`
	Lines  string `json:"lines"`
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256"`
}

// ManifestIssue is one linked issue: SHA256 is of its title, a line feed and its body as read.
type ManifestIssue struct {
	Number int    `json:"number"`
	SHA256 string `json:"sha256"`
}

// Empty reports whether nothing was given.
func (m *Manifest) Empty() bool {
	return m == nil || len(m.Instructions) == 0 && len(m.Code) == 0 && len(m.Issues) == 0
}

// Add records what a request's context gave, keeping every entry once and the lists sorted.
func (m *Manifest) Add(c *Context) {
	if c == nil {
		return
	}
	for _, r := range c.Rules {
		m.Instructions = addOnce(m.Instructions, ManifestFile{Path: r.Path, Repository: r.Repository, Commit: r.Commit, SHA256: r.SHA256,
			Size: r.Size, Section: r.Section, Truncated: r.Truncated})
	}
	for _, s := range c.Code {
		m.Code = addOnce(m.Code, ManifestCode{Path: s.Path, Commit: s.Commit, Lines: fmt.Sprintf("%d-%d", s.Start, s.End), Kind: s.Kind, SHA256: s.SHA256})
	}
	for _, is := range c.Issues {
		m.Issues = addOnce(m.Issues, ManifestIssue{Number: is.Number, SHA256: is.SHA256})
	}
	slices.SortFunc(m.Instructions, func(a, b ManifestFile) int {
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Path, b.Path))
	})
	slices.SortFunc(m.Code, func(a, b ManifestCode) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Lines, b.Lines), cmp.Compare(a.SHA256, b.SHA256))
	})
	slices.SortFunc(m.Issues, func(a, b ManifestIssue) int { return cmp.Compare(a.Number, b.Number) })
}

func addOnce[T comparable](list []T, v T) []T {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// Digest is the SHA-256 of the manifest's RFC 8785 (JCS) form, hex: what a receipt binds.
func (m *Manifest) Digest() (string, error) {
	c := *m
	if c.Instructions == nil {
		c.Instructions = []ManifestFile{}
	}
	if c.Code == nil {
		c.Code = []ManifestCode{}
	}
	if c.Issues == nil {
		c.Issues = []ManifestIssue{}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the context manifest: %w", err)
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return "", fmt.Errorf("canonicalise the context manifest: %w", err)
	}
	return digest.SHA256Hex(canon), nil
}
