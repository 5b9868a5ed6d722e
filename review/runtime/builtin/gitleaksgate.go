package builtin

import (
	"regexp/syntax"
	"slices"
	"unicode/utf8"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// A keyword line only proves that a line-bound rule may match there. generic-api-key's
// expression, the costliest, also needs a value after its keyword: ten or more characters of
// [\w.=-] or twelve of [a-z0-9+/]. Source code names "key" and "token" on many lines without
// such a value after them ("Put(ctx, key, value)"), and the slow NFA would run over each. A run
// gate is that kind of necessary condition, derived from a rule's expression: every match holds,
// after the end of one of the rule's keywords on its first line, a run of at least n
// characters of a class. A keyword line whose text after its first keyword holds no such run,
// and from which no match can reach the next line, cannot start a match and is not scanned.
// Likewise a rule without keywords, which gitleaks runs over every text, is run only over a
// text holding the run its every match needs (private-key-body: 64 base64 characters). The
// regexp package has no such analysis (it only extracts literal prefixes), hence this one.

// runGate is a run of at least n characters of chars that every match of a rule holds after
// the end of a keyword on its first line. chars never holds a newline: a run is within a line.
type runGate struct {
	chars *charSet
	n     int
}

// minTextGate is the shortest run a rule without keywords must need for gatedRule to scan
// with it apart: a shorter run is in most texts.
const minTextGate = 16

// gatedRule is a rule without keywords, in a detector of its own, and the run every match of
// it holds.
type gatedRule struct {
	d    *detect.Detector
	gate *runGate
}

// textGate is the run every match of r holds when r has no keywords and that run is at least
// minTextGate characters long; otherwise nil. Rules gitleaks treats apart (path rules, rules
// requiring other rules, rules not reported alone) have none.
func textGate(r gitleaks.Rule) *runGate {
	if r.Regex == nil || r.Path != nil || len(r.RequiredRules) > 0 || r.SkipReport || len(r.Keywords) > 0 {
		return nil
	}
	re, err := syntax.Parse(r.Regex.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	if g := runIn(re); g.n >= minTextGate {
		return &g
	}
	return nil
}

// runGateOf derives the gate of a line-bound rule from its expression expr and its keywords kws
// (lower-cased); nil when none is found.
func runGateOf(expr string, kws []string) *runGate {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	if g := afterKeyword(re, kws); g.n > 0 {
		return &g
	}
	return nil
}

// afterKeyword is the longest run every match of re holds after a keyword that is on its
// first line, following keywordFirst's reading of re; n is 0 when there is none.
func afterKeyword(re *syntax.Regexp, kws []string) runGate {
	switch re.Op {
	case syntax.OpCapture:
		return afterKeyword(re.Sub[0], kws)
	case syntax.OpAlternate:
		// Each branch holds its own keyword: the run is after one of them, so after the
		// first keyword of the line.
		return unionRun(re.Sub, func(s *syntax.Regexp) runGate { return afterKeyword(s, kws) })
	case syntax.OpConcat:
		for j, s := range re.Sub {
			if keywordFirst(s, kws) {
				// The parts after s start where s's match ends, after its keyword.
				g := requiredRun(re.Sub[j+1:])
				if in := afterKeyword(s, kws); in.n > g.n {
					g = in
				}
				return g
			}
			for i := j + 2; i <= len(re.Sub); i++ {
				run := &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[j:i]}
				if _, ok := finiteWords(run, 256); !ok {
					break
				}
				if keywordFirst(run, kws) {
					return requiredRun(re.Sub[i:])
				}
			}
			if maxNewlines(s) != 0 {
				return runGate{}
			}
		}
	}
	return runGate{}
}

// requiredRun is the longest run that every match of the concatenation of subs holds: a part
// matching only characters of a class, or several such parts in a row that each match at
// least one, or a run inside a part.
func requiredRun(subs []*syntax.Regexp) runGate {
	var best, cur runGate
	for _, s := range subs {
		cs := &charSet{}
		if n := minLen(s); n > 0 && cs.add(s) && !cs.hasNewline() {
			if cur.n == 0 {
				cur.chars = &charSet{}
			}
			cur.chars.union(cs)
			cur.n += n
			if cur.n > best.n {
				best = runGate{cur.chars.clone(), cur.n}
			}
			continue
		}
		cur = runGate{}
		if in := runIn(s); in.n > best.n {
			best = in
		}
	}
	return best
}

// runIn is the longest run every match of re holds.
func runIn(re *syntax.Regexp) runGate {
	switch re.Op {
	case syntax.OpCapture:
		return runIn(re.Sub[0])
	case syntax.OpConcat:
		return requiredRun(re.Sub)
	case syntax.OpAlternate:
		return unionRun(re.Sub, runIn)
	}
	if n := minLen(re); n > 0 {
		if cs := (&charSet{}); cs.add(re) && !cs.hasNewline() {
			return runGate{cs, n}
		}
	}
	if re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Min > 0 {
		return runIn(re.Sub[0])
	}
	return runGate{}
}

// unionRun is the run every one of alternatives holds one of: the union of their classes, the
// shortest of their lengths.
func unionRun(alternatives []*syntax.Regexp, of func(*syntax.Regexp) runGate) runGate {
	out := runGate{chars: &charSet{}}
	for i, s := range alternatives {
		g := of(s)
		if g.n == 0 {
			return runGate{}
		}
		out.chars.union(g.chars)
		if i == 0 || g.n < out.n {
			out.n = g.n
		}
	}
	return out
}

// minLen is the fewest characters a match of re holds.
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLen(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minLen(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // empty-width assertions, the empty match, star, quest
}

// passes says whether text holds a run of the gate's characters as long as the gate asks. An
// invalid byte is U+FFFD, as the regexp package reads it.
func (g *runGate) passes(text string) bool {
	if len(g.chars.ranges) > 0 {
		return g.passesRunes(text)
	}
	// Every character is ASCII: no byte of another character (or an invalid one) is of
	// chars, so bytes can be counted. The last byte of a run starting at i is at i+n-1; when
	// it is not of chars, no run starts before it.
	in := func(c byte) bool { return c < utf8.RuneSelf && g.chars.ascii[c] }
	for i := 0; i+g.n <= len(text); {
		j := i + g.n - 1
		for j >= i && in(text[j]) {
			j--
		}
		if j < i {
			return true
		}
		i = j + 1
	}
	return false
}

// passesRunes is passes, one character at a time.
func (g *runGate) passesRunes(text string) bool {
	n := 0
	for _, c := range text {
		if c < utf8.RuneSelf && g.chars.ascii[c] || c >= utf8.RuneSelf && classHas(g.chars.ranges, c) {
			if n++; n >= g.n {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

func (cs *charSet) union(o *charSet) {
	for i, ok := range o.ascii {
		cs.ascii[i] = cs.ascii[i] || ok
	}
	cs.ranges = append(cs.ranges, o.ranges...)
}

func (cs *charSet) clone() *charSet {
	c := *cs
	c.ranges = slices.Clone(cs.ranges)
	return &c
}

func (cs *charSet) hasNewline() bool { return cs.ascii['\n'] }
