package modelctx

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrTooLarge is what Tree.Read returns for a file larger than the limit asked.
var ErrTooLarge = errors.New("file too large")

// Entry is one name in a directory of a Tree.
type Entry struct {
	Name string
	Dir  bool
}

// Tree reads one revision of a repository.
type Tree interface {
	// Commit is the revision read (a full SHA where known).
	Commit() string
	// List names the entries of dir ("" is the root); an absent directory has none.
	List(ctx context.Context, dir string) ([]Entry, error)
	// Read returns a file's bytes; ok is false when there is no such file. A file larger than
	// limit is ErrTooLarge.
	Read(ctx context.Context, path string, limit int) (data []byte, ok bool, err error)
}

// IssueReader reads one issue of the reviewed repository. ok is false when the number is not
// an issue the reader may show (absent, or a pull request).
type IssueReader interface {
	Issue(ctx context.Context, number int) (is Issue, ok bool, err error)
}

// Sources are where Gather reads. A nil member is not read.
type Sources struct {
	// Base is the trusted revision instruction files come from: the base branch (the merge
	// base locally), never the pull request's head.
	Base Tree
	// Org is the organisation's fallback repository, read when Base has no instruction file;
	// OrgName is its owner/name.
	Org     Tree
	OrgName string
	// Head is the revision under review, for the code around each change.
	Head Tree
	// Issues reads linked issues.
	Issues IssueReader
}

// Settings are the repository's context settings (the .asdd.yml context section).
type Settings struct {
	Instructions InstructionMode
	// Paths are the files read in InstructionsPaths mode.
	Paths []string
	// Code widens hunks to their enclosing code.
	Code bool
	// Issues reads linked issues.
	Issues bool
	// MaxTokens is the budget of one request's code and issues, in estimated tokens.
	MaxTokens int
}

// DefaultMaxTokens is the default budget of one request's code and issues.
const DefaultMaxTokens = 6000

// ChangedFile is a changed file Gather may read the head version of.
type ChangedFile struct {
	Path    string
	Removed bool
	Binary  bool
	// Size is the size at the head when known (0: unknown).
	Size int64
}

// Limits of the head files read for enclosing code.
const (
	maxSourceFiles = 40
	maxSourceBytes = 256 << 10
)

// Request is what Gather reads context for.
type Request struct {
	Owner, Repo string
	Title, Body string
	Changed     []ChangedFile
	Settings    Settings
}

// Material is everything Gather read, once per review; Build picks from it per request.
type Material struct {
	Instructions []Instruction
	// Sources holds the head version of changed files, by path.
	Sources map[string][]byte
	// HeadCommit is the revision Sources were read at.
	HeadCommit string
	Issues     []Issue
	// Notes say what could not be read, for the operator's log.
	Notes    []string
	Settings Settings

	// decls are the top-level declarations of each Go source, parsed once by Gather so that
	// the requests of a review (built at once) do not parse the same file again.
	decls map[string][]span
}

// Gather reads the material of a review. A read that fails is a note, never an error: context
// makes a review better, its absence never stops one.
func Gather(ctx context.Context, src Sources, req Request) *Material {
	m := &Material{Sources: map[string][]byte{}, Settings: req.Settings}
	if m.Settings.MaxTokens <= 0 {
		m.Settings.MaxTokens = DefaultMaxTokens
	}
	var paths []string
	for _, c := range req.Changed {
		paths = append(paths, c.Path)
	}
	if src.Base != nil && req.Settings.Instructions != InstructionsOff {
		ins, notes, err := discoverInstructions(ctx, src.Base, paths, req.Settings.Instructions, req.Settings.Paths)
		m.Notes = append(m.Notes, notes...)
		if err != nil {
			m.Notes = append(m.Notes, "instruction files: "+err.Error())
		}
		m.Instructions = ins
		if len(ins) == 0 && err == nil && src.Org != nil && req.Settings.Instructions == InstructionsAuto {
			// Like .asdd.yml: the organisation's files apply when the repository has none. Only
			// its root is listed: its per-directory files describe its own tree, not this one.
			org, notes, err := discoverInstructions(ctx, src.Org, nil, InstructionsAuto, nil)
			m.Notes = append(m.Notes, notes...)
			if err != nil {
				m.Notes = append(m.Notes, "organisation instruction files: "+err.Error())
			}
			for i := range org {
				org[i].Repository = src.OrgName
			}
			m.Instructions = org
		}
	}
	if src.Head != nil && req.Settings.Code {
		m.HeadCommit = src.Head.Commit()
		m.readSources(ctx, src.Head, req.Changed)
	}
	if src.Issues != nil && req.Settings.Issues {
		for _, n := range LinkedIssues(req.Owner, req.Repo, req.Title, req.Body) {
			is, ok, err := src.Issues.Issue(ctx, n)
			if err != nil {
				m.Notes = append(m.Notes, fmt.Sprintf("issue #%d: %v", n, err))
				continue
			}
			if ok {
				m.Issues = append(m.Issues, is)
			}
		}
	}
	return m
}

// readSources reads the head version of the changed text files, within the limits.
func (m *Material) readSources(ctx context.Context, head Tree, changed []ChangedFile) {
	n := 0
	for _, c := range changed {
		if c.Removed || c.Binary || c.Size > maxSourceBytes {
			continue
		}
		if n == maxSourceFiles {
			m.Notes = append(m.Notes, fmt.Sprintf("enclosing code read for the first %d changed files only", maxSourceFiles))
			return
		}
		n++
		data, ok, err := head.Read(ctx, c.Path, maxSourceBytes)
		switch {
		case errors.Is(err, ErrTooLarge) || !ok && err == nil:
			continue
		case err != nil:
			m.Notes = append(m.Notes, fmt.Sprintf("read %s at the head: %v", c.Path, err))
			continue
		}
		m.Sources[c.Path] = data
		if strings.HasSuffix(c.Path, ".go") {
			if d, ok := goDecls(data); ok {
				if m.decls == nil {
					m.decls = map[string][]span{}
				}
				m.decls[c.Path] = d
			}
		}
	}
}
