package review

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TokensLine says in one line what a review spent on models: the total, its parts, the calls
// and each model lens's share, with "estimated" whenever a server sent no count. It holds only
// numbers and lens names (trusted policy text). "" when no model was called.
func TokensLine(d *Decision) string {
	t := d.Tokens
	if len(t.Calls) == 0 {
		return earlierLine(d)
	}
	sent := 0
	for _, c := range t.Calls {
		if c.Attempts > 0 {
			sent++
		}
	}
	held := ""
	if n := len(t.Calls) - sent; n > 0 {
		held = fmt.Sprintf(", %d call(s) not sent (token budget or prompt budget)", n)
	}
	if sent == 0 {
		return "Model tokens: none; " + held[2:] + "."
	}
	est := ""
	if t.Estimated {
		est = ", estimated"
	}
	var b strings.Builder
	cached := ""
	if t.CachedPrompt > 0 {
		cached = fmt.Sprintf(", %s of the prompt from the server's cache", thousands(t.CachedPrompt))
	}
	fmt.Fprintf(&b, "Model tokens: %s (prompt %s, completion %s%s%s) in %d call(s)%s", thousands(t.Total),
		thousands(t.Prompt), thousands(t.Completion), est, cached, sent, held)
	var per []string
	for _, l := range d.Lenses {
		if l.Tokens == nil || l.Tokens.Total == 0 || l.Tokens.Earlier {
			continue
		}
		s := l.Name + " " + thousands(l.Tokens.Total)
		if l.Tokens.Estimated {
			s += " (estimated)"
		}
		per = append(per, s)
	}
	if len(per) > 0 {
		b.WriteString("; per lens: " + strings.Join(per, ", "))
	}
	b.WriteString(proseShare(t.Calls))
	return b.String() + "."
}

// earlierLine names the tokens of lenses whose result an earlier review of the same head
// spent and this one reuses ("" when none).
func earlierLine(d *Decision) string {
	var per []string
	for _, l := range d.Lenses {
		if l.Tokens == nil || !l.Tokens.Earlier || l.Tokens.Total == 0 {
			continue
		}
		s := l.Name + " " + thousands(l.Tokens.Total)
		if l.Tokens.Estimated {
			s += " (estimated)"
		}
		per = append(per, s)
	}
	if len(per) == 0 {
		return ""
	}
	return "Model tokens: none in this run; reused from the earlier review of this head, spent then: " + strings.Join(per, ", ") + "."
}

// RedactedLine says how many secret values were replaced before the change went to a model,
// by kind (rule ids, trusted text). "" when none were.
func RedactedLine(in ModelInput) string {
	if in.RedactedValues == 0 {
		return ""
	}
	kinds := make([]string, 0, len(in.RedactedKinds))
	for k := range in.RedactedKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, in.RedactedKinds[k])
	}
	return fmt.Sprintf("%d secret value(s) replaced by a placeholder before the change was sent to the model (%s).",
		in.RedactedValues, strings.Join(parts, ", "))
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
