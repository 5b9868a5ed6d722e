package builtin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"regexp"
	"unicode/utf8"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// secretRule is one pattern for a committed credential. Keyword is a cheap literal that must be
// on the line before the regular expression runs.
type secretRule struct {
	id      string
	keyword []byte
	// foldWords, when set, replace keyword: one of them must be on the line, in any case.
	foldWords []string
	// assign requires an assignment (= or :) on the line.
	assign   bool
	re       *regexp.Regexp
	severity string
	title    string
	// placeholderOK skips matches that look like documentation placeholders.
	placeholderOK bool
	// entropy, when positive, is the minimum Shannon entropy (bits per byte) of the secret.
	entropy float64
	// message replaces the credential advice for rules that are not about credentials.
	message string
	// group is the submatch that holds the secret itself (0: the whole match).
	group int
	// mixed requires the secret to mix letters and digits.
	mixed bool
	// generic rules are skipped on a line a specific rule already reported, so one token is
	// one finding. They come after the specific rules.
	generic bool
	// prefix is how many leading bytes of the secret are a public marker of its kind ("AKIA",
	// "ghp_") and may be shown; the rest of a secret is never shown.
	prefix int
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

var secretRules = []secretRule{
	{
		id: ruleKey, keyword: []byte("PRIVATE KEY"),
		re:       regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----`),
		severity: runtime.SeverityCritical, title: "Private key committed",
	},
	{
		id: "aws-access-key-id", keyword: []byte("A"),
		re:       regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b`),
		severity: runtime.SeverityCritical, title: "AWS access key id committed", placeholderOK: true, prefix: 4,
	},
	{
		id:       "aws-secret-access-key",
		re:       regexp.MustCompile(`(?i)aws.{0,20}secret.{0,20}['"]?\s*[:=]\s*['"]?([A-Za-z0-9/+=]{40})\b`),
		severity: runtime.SeverityCritical, title: "AWS secret access key committed", placeholderOK: true, entropy: 4.0,
		group: 1,
	},
	{
		id: "github-token", keyword: []byte("gh"),
		re:       regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,255}\b`),
		severity: runtime.SeverityCritical, title: "GitHub token committed", prefix: 4,
	},
	{
		id: "github-fine-grained-token", keyword: []byte("github_pat_"),
		re:       regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{82}\b`),
		severity: runtime.SeverityCritical, title: "GitHub fine-grained token committed", prefix: 11,
	},
	{
		id: "gcp-api-key", keyword: []byte("AIza"),
		re:       regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`),
		severity: runtime.SeverityHigh, title: "Google API key committed", prefix: 4,
	},
	{
		id: "gcp-service-account", keyword: []byte("service_account"),
		re:       regexp.MustCompile(`"type"\s*:\s*"service_account"`),
		severity: runtime.SeverityHigh, title: "Google service account credentials committed",
	},
	{
		id: "slack-token", keyword: []byte("xox"),
		re:       regexp.MustCompile(`\bxox[abposr]-[0-9A-Za-z-]{10,}\b`),
		severity: runtime.SeverityHigh, title: "Slack token committed", prefix: 5,
	},
	{
		id: "stripe-live-key", keyword: []byte("_live_"),
		re:       regexp.MustCompile(`\b[sr]k_live_[0-9A-Za-z]{20,}\b`),
		severity: runtime.SeverityCritical, title: "Stripe live key committed", prefix: 8,
	},
	{
		id: "openai-api-key", keyword: []byte("sk-"),
		re:       regexp.MustCompile(`\bsk-(proj-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b`),
		severity: runtime.SeverityCritical, title: "OpenAI API key committed", prefix: 3,
	},
	{
		id: "hardcoded-password", foldWords: []string{"pass", "secret", "key", "token"}, assign: true,
		re: regexp.MustCompile(`(?i)\b(password|passwd|secret|api_?key|access_?token|auth_?token)\b["']?\s*[:=]\s*` +
			`["']([^"'\s$<>{}]{12,})["']`),
		severity: runtime.SeverityMedium, title: "Hard-coded credential", placeholderOK: true, entropy: 3.5,
		group: 2, generic: true,
	},
}

// Rules for credentials written without quotes, where a looser pattern needs more evidence.
func init() {
	secretRules = append(secretRules,
		secretRule{
			// scheme://user:password@host — a database or broker URL with its password.
			id: "url-credentials", keyword: []byte("://"),
			re:       regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^/\s:@'"]*:([^/\s@'"$<>{}]{8,})@[A-Za-z0-9.\[-]`),
			severity: runtime.SeverityHigh, title: "Password in a connection URL", placeholderOK: true, entropy: 3.0,
			group: 1, mixed: true, generic: true,
		},
		secretRule{
			// NAME_PASSWORD=value, the .env and shell form, unquoted.
			id: "env-credential", foldWords: []string{"pass", "secret", "token", "key"}, assign: true,
			re: regexp.MustCompile(`^\s*(export\s+)?[A-Z][A-Z0-9_]*(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY)[A-Z0-9_]*=` +
				`([A-Za-z0-9!#%&*+,.:;=?@^_~-]{10,})\s*(#.*)?$`),
			severity: runtime.SeverityMedium, title: "Hard-coded credential", placeholderOK: true, entropy: 3.5,
			group: 3, mixed: true, generic: true,
		},
	)
}

// hasLetterAndDigit reports whether s mixes letters and digits, as generated secrets do and
// names such as "my-app-secret-name" do not.
func hasLetterAndDigit(s []byte) bool {
	var letter, digit bool
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// weakWord reports a value built around a word that marks sample credentials
// ("password12", "secret123", "letmein1").
func weakWord(s []byte) bool {
	for _, w := range []string{"password", "passwd", "secret", "letmein", "123456", "qwerty"} {
		if containsFold(s, w) {
			return true
		}
	}
	return false
}

var placeholders = [][]byte{
	[]byte("EXAMPLE"), []byte("example"), []byte("changeme"), []byte("CHANGEME"), []byte("your_"),
	[]byte("YOUR_"), []byte("dummy"), []byte("DUMMY"), []byte("fake"), []byte("FAKE"), []byte("placeholder"),
	[]byte("xxxx"), []byte("XXXX"), []byte("redacted"), []byte("REDACTED"), []byte("test"), []byte("TEST"),
	[]byte("sample"), []byte("0000000000"),
}

func looksLikePlaceholder(s []byte) bool {
	for _, p := range placeholders {
		if bytes.Contains(s, p) {
			return true
		}
	}
	return false
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s []byte) float64 {
	if len(s) == 0 {
		return 0
	}
	var counts [256]int
	for _, c := range s {
		counts[c]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// maxScanLine bounds the part of a line the pattern checks look at; minified files can have
// megabyte-long lines.
const maxScanLine = 8 << 10

func scanLines(f *diff.File, needed map[string]bool, out map[string][]runtime.Finding) {
	path := f.Path()
	// Code patterns in prose are examples, not code.
	prose := isProse(path)
	var (
		sawStart, sawEnd bool
		midLines         []diff.Line
		conflictFound    []runtime.Finding
		key              *pemKey // a key header whose body is still being read
	)
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
			reported := false
			for i := range secretRules {
				if reported && secretRules[i].generic {
					continue
				}
				fd, ok := matchSecret(&secretRules[i], text, path, l.New)
				if !ok {
					continue
				}
				if fd.Rule != ruleKey {
					out[GroupSecrets] = append(out[GroupSecrets], fd)
					reported = true
					continue
				}
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
	// A lone "=======" is a Markdown heading underline; it is a marker only next to the others.
	if sawStart || sawEnd {
		for _, l := range midLines {
			conflictFound = append(conflictFound, conflictFinding(path, l.New, l.Text))
		}
	}
	out[GroupConflicts] = append(out[GroupConflicts], conflictFound...)
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
	m := r.re.FindSubmatch(text)
	if m == nil {
		return runtime.Finding{}, false
	}
	secret := m[0]
	if r.group > 0 && r.group < len(m) && len(m[r.group]) > 0 {
		secret = m[r.group]
	}
	if r.placeholderOK && looksLikePlaceholder(m[0]) {
		return runtime.Finding{}, false
	}
	if r.entropy > 0 && entropy(secret) < r.entropy || r.mixed && (!hasLetterAndDigit(secret) || weakWord(secret)) {
		return runtime.Finding{}, false
	}
	msg := r.message
	if msg == "" {
		msg = "A credential (" + redact(secret, r.prefix) + ") is added in this change. Remove it, rotate it now " +
			"(it is in the history), and load it from a secret store instead."
	}
	return runtime.Finding{
		Rule: r.id, Severity: r.severity, Path: path, Line: line, Title: r.title, Message: msg,
		Key: lineKey(secret),
	}, true
}

func keywordPresent(r *secretRule, text []byte) bool {
	if r.assign && bytes.IndexByte(text, '=') < 0 && bytes.IndexByte(text, ':') < 0 {
		return false
	}
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
