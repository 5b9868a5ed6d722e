package builtin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"unicode/utf8"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// secretRule is one line pattern: a private key header, or a code pattern that switches off a
// protection. Keyword is a cheap literal that must be on the line before the regular expression
// runs. (Credentials other than private keys are found by the rule set in secrets.go.)
type secretRule struct {
	id      string
	keyword []byte
	// foldWords, when set, replace keyword: one of them must be on the line, in any case.
	foldWords []string
	re        *regexp.Regexp
	severity  string
	title     string
	// message replaces the credential advice for rules that are not about credentials.
	message string
}

// unsafeRules are code patterns that switch off a protection.
var unsafeRules = []secretRule{
	{
		id: "tls-verification-disabled", foldWords: []string{"insecureskipverify", "verify", "unauthorized", "cert_none", "unverified"},
		re: regexp.MustCompile(`InsecureSkipVerify\s*:\s*true|\bverify\s*=\s*False\b|rejectUnauthorized\s*:\s*false|` +
			`NODE_TLS_REJECT_UNAUTHORIZED\s*=\s*['"]?0|ssl\._create_unverified_context|(cert_reqs|verify_mode)\s*=\s*ssl\.CERT_NONE`),
		severity: runtime.SeverityHigh, title: "TLS certificate verification disabled",
		message: "Certificate checks are switched off, so anyone on the network path can impersonate the server. " +
			"Trust the right CA instead.",
	},
	{
		id: "remote-script-piped-to-shell", foldWords: []string{"curl", "wget"},
		re: regexp.MustCompile(`\b(curl|wget)\b[^|\n]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`),
		// Medium: it is how many tools document their installation (golangci-lint, rustup), so
		// it is a concern to weigh, not a reason to fail the gate.
		severity: runtime.SeverityMedium, title: "Remote script piped into a shell",
		message: "A script downloaded at run time is executed unseen; a compromised or spoofed host runs code here. " +
			"Pin and verify what is downloaded (checksum or signature) before running it.",
	},
}

// pemRule finds a private key's header line; pemKey then tells a real key from a placeholder.
// Every other secret is found by the rule set in secrets.go.
var pemRule = secretRule{
	id: ruleKey, keyword: []byte("PRIVATE KEY"),
	re:       pemHeader,
	severity: runtime.SeverityCritical, title: "Private key committed",
}

// maxScanLine bounds the part of a line the pattern checks look at; minified files can have
// megabyte-long lines.
const maxScanLine = 8 << 10

// scanLines runs the line checks of the needed groups over a file's added lines; secrets is
// the rule set, nil when the secrets group is not needed. added is a buffer for the file's
// added lines, returned for the next file: the lines of one file are not kept past its scan,
// and a large diff makes no garbage of them. The file's secrets detection is returned for
// finish, nil when there was none.
func scanLines(f *diff.File, needed map[string]bool, secrets *SecretRules, out map[string][]runtime.Finding, added []diff.Line) ([]diff.Line, *secretScan) {
	path := f.Path()
	// Code patterns in prose are examples, not code.
	prose := isProse(path)
	var (
		sawStart, sawEnd bool
		midLines         []diff.Line
		conflictFound    []runtime.Finding
		key              *pemKey // a key header whose body is still being read
	)
	added = added[:0]
	f.Walk(func(l diff.Line) bool {
		if l.Kind != '+' {
			return true
		}
		text := l.Text
		if len(text) > maxScanLine {
			text = text[:maxScanLine]
		}
		if needed[GroupSecrets] {
			if key != nil {
				if done, real := key.feed(text); done {
					if real {
						out[GroupSecrets] = append(out[GroupSecrets], key.finding)
					}
					key = nil
				}
			}
			added = append(added, l)
			if fd, ok := matchSecret(&pemRule, text, path, l.New); ok {
				// A key header counts only with a key body after it; "-----BEGIN ... KEY-----"
				// alone or followed by a stub ("AAAA", "...") is a placeholder in docs and tests.
				pk := &pemKey{finding: fd}
				if done, real := pk.feedRest(text); done {
					if real {
						out[GroupSecrets] = append(out[GroupSecrets], fd)
					}
				} else if key == nil {
					key = pk
				}
			}
		}
		if needed[GroupUnsafe] && !prose {
			for i := range unsafeRules {
				if fd, ok := matchSecret(&unsafeRules[i], text, path, l.New); ok {
					out[GroupUnsafe] = append(out[GroupUnsafe], fd)
				}
			}
		}
		if needed[GroupConflicts] {
			switch {
			case conflictMarker(text, '<'):
				sawStart = true
				conflictFound = append(conflictFound, conflictFinding(path, l.New, text))
			case conflictMarker(text, '>'):
				sawEnd = true
				conflictFound = append(conflictFound, conflictFinding(path, l.New, text))
			case bytes.Equal(text, []byte("=======")):
				midLines = append(midLines, l)
			}
		}
		if needed[GroupUnicode] {
			if r, ok := hiddenRune(text); ok {
				out[GroupUnicode] = append(out[GroupUnicode], runtime.Finding{
					Rule: "hidden-unicode", Severity: runtime.SeverityHigh, Path: path, Line: l.New,
					Title: "Invisible or bidirectional Unicode control character",
					Message: "The line contains U+" + hexRune(r) + ", which can make code read differently " +
						"from how it runs (Trojan Source). Remove it or escape it.",
					Key: lineKey(text),
				})
			}
		}
		return true
	})
	if key != nil && key.real() {
		out[GroupSecrets] = append(out[GroupSecrets], key.finding)
	}
	var scan *secretScan
	if needed[GroupSecrets] {
		var fs []runtime.Finding
		fs, scan = secrets.findings(path, added)
		out[GroupSecrets] = append(out[GroupSecrets], fs...)
	}
	// A lone "=======" is a Markdown heading underline; it is a marker only next to the others.
	if sawStart || sawEnd {
		for _, l := range midLines {
			conflictFound = append(conflictFound, conflictFinding(path, l.New, l.Text))
		}
	}
	out[GroupConflicts] = append(out[GroupConflicts], conflictFound...)
	return added, scan
}

func conflictMarker(text []byte, c byte) bool {
	if len(text) < 7 {
		return false
	}
	for i := 0; i < 7; i++ {
		if text[i] != c {
			return false
		}
	}
	return len(text) == 7 || text[7] == ' '
}

func conflictFinding(path string, line int, text []byte) runtime.Finding {
	return runtime.Finding{
		Rule: "conflict-marker", Severity: runtime.SeverityHigh, Path: path, Line: line,
		Title:   "Merge-conflict marker committed",
		Message: "An unresolved merge-conflict marker was added; resolve the conflict before merging.",
		Key:     lineKey(text),
	}
}

func matchSecret(r *secretRule, text []byte, path string, line int) (runtime.Finding, bool) {
	if !keywordPresent(r, text) {
		return runtime.Finding{}, false
	}
	m := r.re.Find(text)
	if m == nil {
		return runtime.Finding{}, false
	}
	msg := r.message
	if msg == "" {
		msg = "A credential (" + redact(m, 0) + ") is added in this change. Remove it, rotate it now " +
			"(it is in the history), and load it from a secret store instead."
	}
	return runtime.Finding{
		Rule: r.id, Severity: r.severity, Path: path, Line: line, Title: r.title, Message: msg,
		Key: lineKey(m),
	}, true
}

func keywordPresent(r *secretRule, text []byte) bool {
	if r.foldWords != nil {
		for _, w := range r.foldWords {
			if containsFold(text, w) {
				return true
			}
		}
		return false
	}
	return bytes.Contains(text, r.keyword)
}

// containsFold reports whether text contains the lower-case ASCII word in any case, without
// allocating.
func containsFold(text []byte, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(text); i++ {
		j := 0
		for ; j < n; j++ {
			c := text[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// redact describes a secret by its public kind marker (the first prefix bytes, when the
// secret is long enough that the rest stays unguessable) and its length; nothing else of it.
func redact(s []byte, prefix int) string {
	if prefix > len(s)-12 || prefix < 0 {
		prefix = 0
	}
	return string(s[:prefix]) + "…(" + itoa(len(s)) + " chars)"
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// lineKey is a short digest of a line, so a finding's id stays stable when lines move while the
// secret itself never appears in the id.
func lineKey(b []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(b))
	return hex.EncodeToString(sum[:8])
}

func hiddenRune(b []byte) (rune, bool) {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r >= 0x200B && r <= 0x200F, r == 0xFEFF && i > 0:
			return r, true
		}
		i += n
	}
	return 0, false
}

func hexRune(r rune) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[r>>12&0xF], digits[r>>8&0xF], digits[r>>4&0xF], digits[r&0xF]})
}

const ruleKey = "private-key"

// minKeyBody is the least base64 a real private key has (an Ed25519 PKCS#8 key has 64).
const minKeyBody = 60

// pemKey follows the lines after a private key header to tell a real key from a placeholder.
type pemKey struct {
	finding runtime.Finding
	body    int
}

func (k *pemKey) real() bool { return k.body >= minKeyBody }

// feedRest looks at what follows the header on its own line (a key in a string literal with
// "\n" escapes). done is true when the END line was seen there.
func (k *pemKey) feedRest(line []byte) (done, real bool) {
	i := bytes.Index(line, []byte("PRIVATE KEY"))
	rest := line[i:]
	if j := bytes.Index(rest, []byte("-----")); j >= 0 {
		rest = rest[j+5:]
	}
	if end := bytes.Index(rest, []byte("-----END")); end >= 0 {
		k.body += base64Count(rest[:end])
		return true, k.real()
	}
	k.body += base64Count(rest)
	return false, false
}

// feed reads one following added line. done is true at the END line or at the first line
// that is not key body.
func (k *pemKey) feed(line []byte) (done, real bool) {
	if end := bytes.Index(line, []byte("-----END")); end >= 0 {
		k.body += base64Count(line[:end])
		return true, k.real()
	}
	t := bytes.Trim(line, " \t\r#\"'`,;+")
	t = bytes.TrimSuffix(t, []byte("\\n"))
	if len(t) < 16 || base64Count(t) != len(t) {
		if bytes.HasPrefix(t, []byte("Proc-Type:")) || bytes.HasPrefix(t, []byte("DEK-Info:")) || len(t) == 0 {
			return false, false
		}
		return true, k.real()
	}
	k.body += len(t)
	return false, false
}

// base64Count counts the base64 alphabet characters in b.
func base64Count(b []byte) int {
	n := 0
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' {
			n++
		}
	}
	return n
}

func isProse(path string) bool {
	switch ext(path) {
	case ".md", ".markdown", ".rst", ".txt", ".adoc":
		return true
	}
	return false
}
