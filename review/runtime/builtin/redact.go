package builtin

import (
	"bytes"
	"regexp"
	"strings"
)

// RedactedPrefix starts every placeholder Redact writes: "[redacted aws-access-token]".
const RedactedPrefix = "[redacted "

// Redactor replaces the secrets the secrets lens recognises (gitleaks' rule set with lensgate's
// rules, and private key blocks) with a placeholder naming their kind, before text leaves for a
// model. It counts what it replaced. A Redactor is for
// one review; it is not safe for concurrent use.
type Redactor struct {
	// Counts is the number of values replaced, by rule id.
	Counts map[string]int
	rules  *SecretRules
}

// NewRedactor returns a redactor using rules (from LoadSecretRules), with nothing counted.
func NewRedactor(rules *SecretRules) *Redactor {
	return &Redactor{Counts: map[string]int{}, rules: rules}
}

// Total is the number of values replaced.
func (r *Redactor) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

var pemHeader = regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----`)

// freeTextPath is the file name free text is redacted as: people paste environment snippets into
// descriptions, so the rules for configuration files (unquoted NAME_PASSWORD=value) apply too.
const freeTextPath = "description.env"

// Text redacts free text: a title, a description, a commit message, a file name.
func (r *Redactor) Text(s string) string {
	return string(r.lines([]byte(s), false))
}

// Diff redacts a unified diff. Each line keeps its '+', '-' or ' ' marker and its line ending
// (CRLF included), and no line is added or removed, so line numbers stay what the diff says.
func (r *Redactor) Diff(b []byte) []byte {
	return r.lines(b, true)
}

// redLine is one line being redacted: its diff marker, its content and its line ending.
type redLine struct {
	marker, content, eol []byte
}

func (r *Redactor) lines(b []byte, isDiff bool) []byte {
	if len(b) == 0 {
		return b
	}
	var ls []redLine
	inKey := false
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			line, b = b, nil
		}
		content := line
		var eol []byte
		if n := len(content); n > 0 && content[n-1] == '\n' {
			content, eol = content[:n-1], content[n-1:]
			if n := len(content); n > 0 && content[n-1] == '\r' {
				content, eol = content[:n-1], line[n-1:]
			}
		}
		var marker []byte
		if isDiff && len(content) > 0 && (content[0] == '+' || content[0] == '-' || content[0] == ' ') &&
			!bytes.HasPrefix(content, []byte("+++ ")) && !bytes.HasPrefix(content, []byte("--- ")) {
			marker, content = content[:1], content[1:]
		}
		var red []byte
		red, inKey = r.line(content, inKey)
		ls = append(ls, redLine{marker: marker, content: red, eol: eol})
	}
	if isDiff {
		for start := 0; start < len(ls); {
			end, path := diffSection(ls, start)
			r.secrets(path, ls[start:end])
			start = end
		}
	} else {
		r.secrets(freeTextPath, ls)
	}
	out := make([]byte, 0, len(b))
	for _, l := range ls {
		out = append(out, l.marker...)
		out = append(out, l.content...)
		out = append(out, l.eol...)
	}
	return out
}

// diffSection returns the end of the file section of a diff that starts at line start (the
// next "diff --git" line) and the file's new path ("" when the section names none).
func diffSection(ls []redLine, start int) (int, string) {
	path := ""
	end := start + 1
	for ; end < len(ls); end++ {
		if len(ls[end].marker) == 0 && bytes.HasPrefix(ls[end].content, []byte("diff --git ")) {
			break
		}
	}
	for _, l := range ls[start:end] {
		if len(l.marker) == 0 && bytes.HasPrefix(l.content, []byte("+++ ")) {
			path = strings.TrimPrefix(string(l.content[4:]), "b/")
			break
		}
	}
	return end, path
}

// secrets replaces what the secret rules find in one file's lines (diff markers removed, so
// a secret spread over added and context lines is seen whole) with a placeholder naming its
// rule. A secret over several lines is replaced line by line, so no line is added or removed.
func (r *Redactor) secrets(path string, ls []redLine) {
	var text strings.Builder
	n := len(ls)
	for _, l := range ls {
		n += len(l.content)
	}
	text.Grow(n)
	for i, l := range ls {
		if i > 0 {
			text.WriteByte('\n')
		}
		text.Write(l.content)
	}
	for _, f := range r.rules.detect(path, text.String()) {
		repl := []byte(RedactedPrefix + f.RuleID + "]")
		pieces := strings.Split(f.Secret, "\n")
		// Each line of the secret is looked for from the finding's first line on: gitleaks
		// reports where a match starts, and its end line is not reliable across lines.
		replaced := 0
		li := max(f.StartLine, 0)
		last := min(li+len(pieces)+2, len(ls)-1)
		for _, piece := range pieces {
			piece = strings.TrimSpace(piece)
			if len(piece) < 4 {
				continue
			}
			for k := li; k <= last; k++ {
				if n := bytes.Count(ls[k].content, []byte(piece)); n > 0 {
					// A fresh slice: the content may alias the caller's bytes.
					ls[k].content = bytes.ReplaceAll(ls[k].content, []byte(piece), repl)
					replaced += n
					li = k
					break
				}
			}
		}
		if replaced > 0 && len(pieces) > 1 {
			replaced = 1 // one secret over several lines
		}
		if replaced > 0 {
			r.Counts[f.RuleID] += replaced
		}
	}
}

// line redacts the private key blocks of one line's content. inKey says a private key block is
// open from an earlier line; the result says whether it still is.
func (r *Redactor) line(content []byte, inKey bool) ([]byte, bool) {
	placeholder := []byte(RedactedPrefix + ruleKey + "]")
	if inKey {
		if end := bytes.Index(content, []byte("-----END")); end >= 0 {
			rest := content[end+len("-----END"):]
			if j := bytes.Index(rest, []byte("-----")); j >= 0 {
				rest = rest[j+5:]
			} else {
				rest = nil
			}
			return append(append([]byte{}, placeholder...), rest...), false
		}
		if keyBodyLine(content) {
			return placeholder, true
		}
		inKey = false
	}
	if loc := pemHeader.FindIndex(content); loc != nil {
		// Any private key block, real or a placeholder in documentation: it costs a model
		// nothing to see the placeholder instead.
		r.Counts[ruleKey]++
		// A fresh slice: appending to a sub-slice of content would write into the caller's
		// bytes, which the free runtimes still read.
		head := append([]byte{}, content[:loc[0]]...)
		rest := content[loc[1]:]
		if end := bytes.Index(rest, []byte("-----END")); end >= 0 {
			tail := rest[end+len("-----END"):]
			if j := bytes.Index(tail, []byte("-----")); j >= 0 {
				tail = tail[j+5:]
			} else {
				tail = nil
			}
			return append(append(head, placeholder...), tail...), false
		}
		return append(head, placeholder...), true
	}
	return content, false
}

// keyBodyLine reports whether a line inside a key block is key material (base64, or the
// headers of an encrypted PEM key), as opposed to the text after a key without an END line.
func keyBodyLine(line []byte) bool {
	t := bytes.Trim(line, " \t\r#\"'`,;+")
	t = bytes.TrimSuffix(t, []byte("\\n"))
	t = bytes.TrimSuffix(t, []byte("\\r"))
	if len(t) == 0 || bytes.HasPrefix(t, []byte("Proc-Type:")) || bytes.HasPrefix(t, []byte("DEK-Info:")) {
		return true
	}
	return base64Count(t) == len(t)
}
