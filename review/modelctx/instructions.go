package modelctx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/pathglob"
)

// Kind is the convention an instruction file follows; it decides where the file applies.
type Kind string

// Instruction file kinds, in the order the prompt lists them: repository-wide first, then the
// per-directory files from the root down, then the path-scoped rules.
const (
	// KindCopilot is .github/copilot-instructions.md: the whole repository.
	KindCopilot Kind = "copilot-instructions"
	// KindAgents is an AGENTS.md: its directory and below, the nearest one winning. When it
	// has a "## Code Review Rules" section, only that section is read.
	KindAgents Kind = "agents"
	// KindClaude is a CLAUDE.md: its directory and below, the nearest one winning.
	KindClaude Kind = "claude"
	// KindReview is a REVIEW.md: its directory and below, the nearest one winning.
	KindReview Kind = "review"
	// KindBugbot is a .cursor/BUGBOT.md: the directory holding .cursor and below, the nearest
	// one winning.
	KindBugbot Kind = "bugbot"
	// KindCopilotPath is a .github/instructions/*.instructions.md: the paths its applyTo
	// front matter names (none without it).
	KindCopilotPath Kind = "copilot-path-instructions"
	// KindCursorRule is a .cursor/rules/* file: the paths its globs front matter names, or every
	// path with alwaysApply: true (none otherwise).
	KindCursorRule Kind = "cursor-rule"
	// KindListed is a file named in context.instructions that follows none of the conventions:
	// the whole repository.
	KindListed Kind = "listed"
)

var kindOrder = map[Kind]int{KindCopilot: 0, KindListed: 1, KindAgents: 2, KindClaude: 3, KindReview: 4, KindBugbot: 5,
	KindCopilotPath: 6, KindCursorRule: 7}

// Limits of the instruction files: each file and all of them together, in bytes of the text
// given to the model. PR-Agent caps AGENTS.md at 500 lines; 16 KiB is about as much.
const (
	MaxInstructionBytes      = 16 << 10
	MaxInstructionTotalBytes = 48 << 10
	// maxInstructionFiles bounds how many files are read at all.
	maxInstructionFiles = 64
	// maxListedDirs bounds the directories listed to find per-directory files: the changed
	// files' ancestors, shallowest first.
	maxListedDirs = 64
	// maxReadBytes is the most read of one file; a larger file is left out.
	maxReadBytes = 256 << 10
)

// Instruction is one instruction file as read from a trusted revision, and where it applies.
type Instruction struct {
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Repository is the repository it was read from when that is not the reviewed one (the
	// organisation fallback), as owner/name.
	Repository string `json:"repository,omitempty"`
	// Commit is the revision it was read at.
	Commit string `json:"commit"`
	// SHA256 and Size are of the whole file as read.
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	// Text is what the model is given: the file without its front matter (for an AGENTS.md
	// with a "## Code Review Rules" section, that section), bounded to MaxInstructionBytes.
	Text string `json:"-"`
	// Truncated marks a text cut at the bound.
	Truncated bool `json:"truncated,omitempty"`
	// Section names the part of the file used ("" for all of it).
	Section string `json:"section,omitempty"`

	dir   string   // for the per-directory kinds: the directory governed ("" is the root)
	globs *globSet // for the path-scoped kinds
	all   bool     // applies to every path
	scope string   // how the prompt says where it applies
}

// Scope says in words where the file applies.
func (in *Instruction) Scope() string { return in.scope }

// Applies reports whether the file applies to a repository path (per-directory kinds: whether
// the path is in the file's directory; the nearest-one rule is Select's).
func (in *Instruction) Applies(p string) bool {
	switch {
	case in.all:
		return true
	case in.globs != nil:
		return in.globs.match(p)
	case isPerDirectory(in.Kind):
		return in.dir == "" || strings.HasPrefix(p, in.dir+"/")
	}
	return false
}

func isPerDirectory(k Kind) bool {
	return k == KindAgents || k == KindClaude || k == KindReview || k == KindBugbot
}

// globSet matches globs; a glob without '/' matches the file name in any directory, as in
// .gitignore (Copilot's applyTo and Cursor's globs are written both ways).
type globSet struct {
	full, base *pathglob.Set
	raw        []string
}

func newGlobSet(globs []string) *globSet {
	var full, base []string
	for _, g := range globs {
		full = append(full, g)
		if !strings.Contains(g, "/") {
			base = append(base, g)
		}
	}
	return &globSet{full: pathglob.Compile(full), base: pathglob.Compile(base), raw: globs}
}

func (g *globSet) match(p string) bool { return g.full.Match(p) || g.base.Match(path.Base(p)) }

// classify names the convention of a path ("" when it follows none).
func classify(p string) Kind {
	base := path.Base(p)
	dir := path.Dir(p)
	switch {
	case p == ".github/copilot-instructions.md":
		return KindCopilot
	case strings.HasPrefix(p, ".github/instructions/") && strings.HasSuffix(base, ".instructions.md"):
		return KindCopilotPath
	case strings.HasPrefix(p, ".cursor/rules/") && (strings.HasSuffix(base, ".mdc") || strings.HasSuffix(base, ".md")):
		return KindCursorRule
	case base == "BUGBOT.md" && path.Base(dir) == ".cursor":
		return KindBugbot
	case base == "AGENTS.md":
		return KindAgents
	case base == "CLAUDE.md":
		return KindClaude
	case base == "REVIEW.md":
		return KindReview
	}
	return ""
}

// IsInstructionPath reports whether a repository path is an instruction file under the
// settings: a conventional one in auto mode, a listed one in paths mode, none when off.
func IsInstructionPath(p string, s Settings) bool {
	switch s.Instructions {
	case InstructionsOff:
		return false
	case InstructionsPaths:
		for _, l := range s.Paths {
			if l == p {
				return true
			}
		}
		return false
	}
	return classify(p) != ""
}

// newInstruction reads a file's content into an Instruction of its kind. ok is false when the
// file applies nowhere (a path-scoped rule without applyTo or globs).
func newInstruction(p string, kind Kind, commit string, data []byte) (Instruction, bool) {
	in := Instruction{Path: p, Kind: kind, Commit: commit, SHA256: digest.SHA256Hex(data), Size: len(data)}
	body, meta := splitFrontMatter(data)
	switch kind {
	case KindCopilot, KindListed:
		in.all, in.scope = true, "the whole repository"
	case KindAgents, KindClaude, KindReview:
		in.dir = dirOf(p)
	case KindBugbot:
		in.dir = dirOf(dirOf(p))
	case KindCopilotPath:
		globs := splitGlobs(meta["applyTo"])
		if len(globs) == 0 {
			return in, false
		}
		in.globs = newGlobSet(globs)
		in.scope = "paths matching " + strings.Join(globs, ", ")
	case KindCursorRule:
		if b, _ := meta["alwaysApply"].(bool); b {
			in.all, in.scope = true, "the whole repository"
			break
		}
		globs := splitGlobs(meta["globs"])
		if len(globs) == 0 {
			return in, false
		}
		in.globs = newGlobSet(globs)
		in.scope = "paths matching " + strings.Join(globs, ", ")
	}
	if isPerDirectory(kind) {
		in.scope = "the whole repository"
		if in.dir != "" {
			in.scope = "files under " + in.dir + "/"
		}
	}
	if kind == KindAgents {
		if sec, ok := markdownSection(body, "Code Review Rules"); ok {
			body, in.Section = sec, "Code Review Rules"
		}
	}
	in.Text, in.Truncated = boundText(strings.TrimSpace(string(body)), MaxInstructionBytes)
	return in, strings.TrimSpace(in.Text) != ""
}

func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

// splitFrontMatter separates a leading YAML front matter block ("---" lines) from the body.
// Front matter that is not valid YAML is treated as having no keys.
func splitFrontMatter(data []byte) ([]byte, map[string]any) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	norm := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	if !bytes.HasPrefix(norm, []byte("---\n")) {
		return data, nil
	}
	rest := norm[4:]
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		return data, nil
	}
	head := rest[:end]
	body := rest[end+4:]
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = nil
	}
	meta := map[string]any{}
	if err := yaml.Unmarshal(head, &meta); err != nil {
		meta = nil
	}
	return body, meta
}

// splitGlobs reads applyTo or globs: a comma-separated string or a list of strings.
func splitGlobs(v any) []string {
	var raw []string
	switch t := v.(type) {
	case string:
		raw = strings.Split(t, ",")
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				raw = append(raw, strings.Split(s, ",")...)
			}
		}
	}
	var out []string
	for _, g := range raw {
		g = strings.Trim(strings.TrimSpace(g), `"'`)
		g = strings.TrimPrefix(g, "/")
		if g != "" && !strings.Contains(g, "..") {
			out = append(out, g)
		}
	}
	return out
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// markdownSection returns the body of the first heading named title (any level, case
// insensitive), up to the next heading of the same or a higher level. Fenced code blocks are
// skipped when looking for headings.
func markdownSection(body []byte, title string) ([]byte, bool) {
	lines := strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n")
	start, level := -1, 0
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") || strings.HasPrefix(strings.TrimSpace(l), "~~~") {
			fenced = !fenced
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		if start < 0 {
			if strings.EqualFold(m[2], title) {
				start, level = i, len(m[1])
			}
			continue
		}
		if len(m[1]) <= level {
			return []byte(strings.Join(lines[start:i], "\n")), true
		}
	}
	if start < 0 {
		return nil, false
	}
	return []byte(strings.Join(lines[start:], "\n")), true
}

// boundText cuts s to at most n bytes at a line end (or a rune boundary when one line is
// longer), and says whether it cut.
func boundText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > n/2 {
		cut = cut[:i]
	}
	for len(cut) > 0 && !validEnd(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut, true
}

// validEnd reports whether s does not end inside a multi-byte rune.
func validEnd(s string) bool {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		c := s[i]
		if c < 0x80 {
			return true
		}
		if c >= 0xC0 {
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			return len(s)-i == need
		}
	}
	return true
}

// InstructionMode says which instruction files are read (context.instructions).
type InstructionMode string

// Instruction modes.
const (
	InstructionsAuto  InstructionMode = "auto"
	InstructionsOff   InstructionMode = "off"
	InstructionsPaths InstructionMode = "paths"
)

// discoverInstructions lists and reads the instruction files of a revision that may apply to
// the changed paths: the per-directory files in every ancestor directory of a changed file, the
// repository-wide and path-scoped files at the root. In InstructionsPaths mode it reads exactly
// the listed paths. Files that cannot be read are named in notes.
func discoverInstructions(ctx context.Context, t Tree, changed []string, mode InstructionMode, listed []string) ([]Instruction, []string, error) {
	var paths []string
	var notes []string
	switch mode {
	case InstructionsOff:
		return nil, nil, nil
	case InstructionsPaths:
		paths = listed
	default:
		found, err := findInstructionPaths(ctx, t, changed)
		if err != nil {
			return nil, nil, err
		}
		paths = found
	}
	var out []Instruction
	for _, p := range paths {
		if len(out) == maxInstructionFiles {
			notes = append(notes, fmt.Sprintf("instruction files beyond the first %d were not read", maxInstructionFiles))
			break
		}
		data, ok, err := t.Read(ctx, p, maxReadBytes)
		switch {
		case errors.Is(err, ErrTooLarge):
			notes = append(notes, fmt.Sprintf("%s is larger than %d bytes and was not read", p, maxReadBytes))
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("read %s: %w", p, err)
		case !ok:
			if mode == InstructionsPaths {
				notes = append(notes, p+" (listed in context.instructions) does not exist on the base branch")
			}
			continue
		}
		kind := classify(p)
		if kind == "" {
			kind = KindListed
		}
		if in, ok := newInstruction(p, kind, t.Commit(), data); ok {
			out = append(out, in)
		}
	}
	sortInstructions(out)
	return out, notes, nil
}

// sortInstructions orders files by kind, then from the root down, then by path, so the prompt's
// rules section is the same bytes whatever order they were read in.
func sortInstructions(ins []Instruction) {
	sort.SliceStable(ins, func(i, j int) bool {
		a, b := ins[i], ins[j]
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
		if da != db {
			return da < db
		}
		return a.Path < b.Path
	})
}

// findInstructionPaths lists the directories where instruction files may be and returns the
// files found, without reading them.
func findInstructionPaths(ctx context.Context, t Tree, changed []string) ([]string, error) {
	var out []string
	for _, dir := range ancestorDirs(changed, maxListedDirs) {
		entries, err := t.List(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", dir, err)
		}
		for _, e := range entries {
			switch {
			case !e.Dir && (e.Name == "AGENTS.md" || e.Name == "CLAUDE.md" || e.Name == "REVIEW.md"):
				out = append(out, join(dir, e.Name))
			case e.Dir && e.Name == ".cursor":
				sub, err := listFiles(ctx, t, join(dir, ".cursor"))
				if err != nil {
					return nil, err
				}
				for _, n := range sub {
					if n == "BUGBOT.md" {
						out = append(out, join(dir, ".cursor/BUGBOT.md"))
					}
				}
				if dir == "" {
					rules, err := listFiles(ctx, t, ".cursor/rules")
					if err != nil {
						return nil, err
					}
					for _, n := range rules {
						if classify(".cursor/rules/"+n) == KindCursorRule {
							out = append(out, ".cursor/rules/"+n)
						}
					}
				}
			case e.Dir && e.Name == ".github" && dir == "":
				gh, err := listFiles(ctx, t, ".github")
				if err != nil {
					return nil, err
				}
				for _, n := range gh {
					if n == "copilot-instructions.md" {
						out = append(out, ".github/copilot-instructions.md")
					}
				}
				ins, err := listFiles(ctx, t, ".github/instructions")
				if err != nil {
					return nil, err
				}
				for _, n := range ins {
					if strings.HasSuffix(n, ".instructions.md") {
						out = append(out, ".github/instructions/"+n)
					}
				}
			}
		}
	}
	return out, nil
}

// listFiles names the files (not directories) of dir; an absent directory has none.
func listFiles(ctx context.Context, t Tree, dir string) ([]string, error) {
	entries, err := t.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.Dir {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// ancestorDirs is every directory holding a changed path, and their ancestors, the root first
// and shallowest first, at most limit of them.
func ancestorDirs(changed []string, limit int) []string {
	seen := map[string]bool{"": true}
	out := []string{""}
	var all []string
	for _, p := range changed {
		for d := dirOf(p); d != ""; d = dirOf(d) {
			if !seen[d] {
				seen[d] = true
				all = append(all, d)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		di, dj := strings.Count(all[i], "/"), strings.Count(all[j], "/")
		if di != dj {
			return di < dj
		}
		return all[i] < all[j]
	})
	for _, d := range all {
		if len(out) == limit {
			break
		}
		out = append(out, d)
	}
	return out
}

// SelectInstructions returns the files that apply to at least one of paths: for each
// per-directory kind the nearest file above each path, every repository-wide file, and the
// path-scoped files whose globs match; in prompt order, within MaxInstructionTotalBytes (files
// beyond it are left out and counted).
func SelectInstructions(all []Instruction, paths []string) (picked []Instruction, left int) {
	use := make([]bool, len(all))
	for _, p := range paths {
		nearest := map[Kind]int{}
		for i := range all {
			in := &all[i]
			if !in.Applies(p) {
				continue
			}
			if !isPerDirectory(in.Kind) {
				use[i] = true
				continue
			}
			if j, ok := nearest[in.Kind]; !ok || len(all[j].dir) < len(in.dir) {
				nearest[in.Kind] = i
			}
		}
		for _, i := range nearest {
			use[i] = true
		}
	}
	total := 0
	for i, u := range use {
		if !u {
			continue
		}
		if total+len(all[i].Text) > MaxInstructionTotalBytes {
			left++
			continue
		}
		total += len(all[i].Text)
		picked = append(picked, all[i])
	}
	return picked, left
}
