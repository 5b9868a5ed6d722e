package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration file.
type Problem struct {
	File    string
	Line    int    // 1-based; 0 when the format gives no position
	Column  int    // 1-based; 0 when unknown
	Key     string // dotted key path, e.g. "review.max_diff_lines"; "" for the whole file
	Message string
	Hint    string // how to fix it; may be empty
	// Input marks a problem YAGA reports as an input error rather than a configuration error:
	// Python's ValueError for an integer of more than 4,300 digits.
	Input bool
}

// String renders "file:line:col: message (hint)" without the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(p.File)
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(p.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Problems is every problem found in one file, in file order. It is the error type returned by
// ParseRepo, ParseYAGATOML and ParsePolicyFile.
type Problems []Problem

// Error joins every problem, one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// First returns the first problem's message alone, which is what a YAGA-compatible error
// document carries.
func (ps Problems) First() string {
	if len(ps) == 0 {
		return ""
	}
	return ps[0].Message
}
