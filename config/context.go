package config

import (
	"fmt"
	"slices"
	"strings"
)

// Context settings: what a model lens reads besides the diff (the context section of
// .asdd.yml).
const (
	// ContextInstructionsAuto reads the conventional instruction files of the base branch.
	ContextInstructionsAuto = "auto"
	// ContextInstructionsOff reads none.
	ContextInstructionsOff = "off"
	// DefaultContextMaxTokens is the default budget, in estimated tokens, of the linked
	// issues and enclosing code of one model request.
	DefaultContextMaxTokens = 6000
	// MaxContextMaxTokens bounds context.max_tokens: with the instruction files' 48 KiB and a
	// diff of review.max_diff_lines, a request stays well within the openai runtime's prompt
	// budget (400,000 bytes).
	MaxContextMaxTokens = 32000
	// maxInstructionPaths bounds a context.instructions list.
	maxInstructionPaths = 64
)

// Context is the context section.
type Context struct {
	// Instructions is "auto" (the conventional files: AGENTS.md, CLAUDE.md, REVIEW.md,
	// .github/copilot-instructions.md, .github/instructions/*.instructions.md, .cursor/rules/*,
	// .cursor/BUGBOT.md) or "off"; InstructionPaths, when set, names the files to read instead.
	Instructions     string
	InstructionPaths []string
	// EnclosingCode widens each changed hunk to its enclosing function, method or class.
	EnclosingCode bool
	// LinkedIssues reads the issues the pull request says it closes.
	LinkedIssues bool
	// MaxTokens is the budget of one model request's linked issues and enclosing code.
	MaxTokens int
}

// DefaultContext is every context source on, within the default budget.
func DefaultContext() Context {
	return Context{Instructions: ContextInstructionsAuto, EnclosingCode: true, LinkedIssues: true, MaxTokens: DefaultContextMaxTokens}
}

// contextField is the context section's schema.
func contextField() *field {
	return sectionField("context",
		&field{name: "instructions", kind: fWordOrStrings, enum: []string{ContextInstructionsAuto, ContextInstructionsOff},
			check: checkInstructionPath, set: func(r *Repo, v any) {
				switch t := v.(type) {
				case string:
					r.Context.Instructions, r.Context.InstructionPaths = t, nil
				case []string:
					r.Context.Instructions, r.Context.InstructionPaths = ContextInstructionsAuto, t
				}
			}},
		boolField("enclosing_code", false, func(r *Repo, v bool) { r.Context.EnclosingCode = v }),
		boolField("linked_issues", false, func(r *Repo, v bool) { r.Context.LinkedIssues = v }),
		intField("max_tokens", false, 0, MaxContextMaxTokens, func(r *Repo, v int) { r.Context.MaxTokens = v }),
	)
}

// checkInstructionPath accepts a repository-relative file path.
func checkInstructionPath(s string) string {
	if strings.ContainsAny(s, "*?\x00") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") ||
		slices.Contains(strings.Split(s, "/"), "..") || slices.Contains(strings.Split(s, "/"), "") {
		return "name a file by its repository-relative path, without globs, '..' or a leading '/'"
	}
	return ""
}

// wordOrStrings decodes a field that is one of its enum words or a list of strings.
func (d *decoder) wordOrStrings(r *Repo, e entry, key string, f *field) {
	if e.val.kind == kString {
		if !slices.Contains(f.enum, e.val.str) {
			d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s: %q is not an allowed value", key, e.val.str),
				fmt.Sprintf("use %s, or a list of file paths", strings.Join(f.enum, " or ")))
			return
		}
		f.set(r, e.val.str)
		return
	}
	list, ok := d.stringList(e, key, f)
	if !ok {
		return
	}
	if len(list) > maxInstructionPaths {
		d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s: %d paths are more than %d", key, len(list), maxInstructionPaths), "list fewer files")
		return
	}
	f.set(r, list)
}
