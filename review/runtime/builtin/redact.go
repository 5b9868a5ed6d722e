package builtin

import (
	"bytes"
	"regexp"
)

// RedactedPrefix starts every placeholder Redact writes: "[redacted aws-access-key-id]".
const RedactedPrefix = "[redacted "

// Redactor replaces the secrets the builtin detectors recognise with a placeholder naming
// their kind, before text leaves for a model. It counts what it replaced. A Redactor is for
// one review; it is not safe for concurrent use.
type Redactor struct {
	// Counts is the number of values replaced, by rule id.
	Counts map[string]int
}

// NewRedactor returns a redactor with nothing counted.
func NewRedactor() *Redactor { return &Redactor{Counts: map[string]int{}} }

// Total is the number of values replaced.
func (r *Redactor) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

var pemHeader = regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----`)

// Text redacts free text: a title, a description, a commit message, a file name.
func (r *Redactor) Text(s string) string {
	return string(r.lines([]byte(s), false))
}

// Diff redacts a unified diff. Each line keeps its '+', '-' or ' ' marker and its line ending
// (CRLF included), and no line is added or removed, so line numbers stay what the diff says.
func (r *Redactor) Diff(b []byte) []byte {
	return r.lines(b, true)
}

func (r *Redactor) lines(b []byte, isDiff bool) []byte {
	if len(b) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
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
		out = append(out, marker...)
		out = append(out, red...)
		out = append(out, eol...)
	}
	return out
}

// line redacts one line's content. inKey says a private key block is open from an earlier
// line; the result says whether it still is.
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
			return append(append([]byte{}, placeholder...), r.rules(rest)...), false
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
		head := append([]byte{}, r.rules(content[:loc[0]])...)
		rest := content[loc[1]:]
		if end := bytes.Index(rest, []byte("-----END")); end >= 0 {
			tail := rest[end+len("-----END"):]
			if j := bytes.Index(tail, []byte("-----")); j >= 0 {
				tail = tail[j+5:]
			} else {
				tail = nil
			}
			return append(append(head, placeholder...), r.rules(tail)...), false
		}
		return append(head, placeholder...), true
	}
	return r.rules(content), false
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

// rules replaces every match of the secret rules on one line, with the same filters the
// findings use (placeholders, entropy, letters and digits), so what is redacted is what the
// security lens reports.
func (r *Redactor) rules(text []byte) []byte {
	if len(text) == 0 {
		return text
	}
	out := text[:len(text):len(text)] // never appended to in place
	copied := false
	for i := range secretRules {
		rule := &secretRules[i]
		if rule.id == ruleKey || !keywordPresent(rule, out) {
			continue
		}
		locs := rule.re.FindAllSubmatchIndex(out, -1)
		if len(locs) == 0 {
			continue
		}
		// From the last match back, so earlier offsets stay valid.
		for k := len(locs) - 1; k >= 0; k-- {
			m := locs[k]
			start, end := m[0], m[1]
			if rule.group > 0 && 2*rule.group+1 < len(m) && m[2*rule.group] >= 0 && m[2*rule.group+1] > m[2*rule.group] {
				start, end = m[2*rule.group], m[2*rule.group+1]
			}
			if rule.placeholderOK && looksLikePlaceholder(out[m[0]:m[1]]) {
				continue
			}
			secret := out[start:end]
			if rule.entropy > 0 && entropy(secret) < rule.entropy || rule.mixed && (!hasLetterAndDigit(secret) || weakWord(secret)) {
				continue
			}
			if !copied {
				out = append([]byte{}, out...)
				copied = true
			}
			repl := []byte(RedactedPrefix + rule.id + "]")
			out = append(out[:start], append(repl, out[end:]...)...)
			r.Counts[rule.id]++
		}
	}
	return out
}
