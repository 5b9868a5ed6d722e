package builtin

import (
	"maps"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// gitleaks runs a rule over a whole fragment when one of the rule's keywords is anywhere in it,
// and a diff's added text nearly always holds "key", "token" or "api": generic-api-key's
// expression, too large for Go's backtracker, then runs the slow NFA over every line. Yet for
// most rules a match starts on a line holding one of the rule's keywords and spans a bounded
// number of lines. Such a rule ("line-bound" here) gets the same findings from a smaller
// fragment: only the lines from each keyword line to as many lines after it as a match can
// span. gitleaks has no such mode, so lensgate builds the fragments and keeps gitleaks' own
// detection on them; the other rules run over the whole text as before.
//
// The fragments keep what gitleaks' detection reads around a match the same as in the whole
// text: each line keeps the "\n" that follows it in the text and the first line of the text
// stays first (or an empty line stands in for it: gitleaks counts columns on the first line
// from 1 but on the others from the newline before them). A match cannot read past the newline
// ending the last line it may span, so what follows a window is never seen. One thing differs:
// gitleaks gives a finding starting on the last line of a text of several lines all the text
// before it as its line, which the allow comment and the allowlists of the line read. So those
// are applied after detection, on the line as the whole text gives it.

// windowed are the rules that scan only windows when they are line-bound: those whose keywords
// are words of nearly every source file. Each has a detector of its own, so generic-api-key's
// findings are also known before gitleaks drops those another rule repeats (gitleaksnames.go). Every other rule's keywords are rare in code, so the
// rule seldom runs at all, and a detector of its own would cost more memory than it saves.
var windowed = map[string]bool{"generic-api-key": true, "jwt": true, "vault-service-token": true}

// lineBoundRule is a rule of windowed and the detector holding it alone.
type lineBoundRule struct {
	// d holds the rule; when it scans windows, without the allowlists that read a finding's
	// line and the allow comment, which lineAllowed applies on the line in the whole text.
	d         *detect.Detector
	lineAllow []*gitleaks.Allowlist
	// chars are the characters a match can hold, nil when any.
	chars *charSet
	// gate is what every match holds after its keyword (gitleaksgate.go), nil when nothing
	// is known.
	gate *runGate
	// span is the most newlines a match can hold; -1 when the rule is not line-bound (in
	// another rule set) and scans the whole text.
	span int
}

// splitDetector is the rule set as a detector over the whole text for the rules that are not
// line-bound, and one detector per line-bound rule over the windows of its keyword lines.
type splitDetector struct {
	whole *detect.Detector
	bound []lineBoundRule
	// gated are rules without keywords, which gitleaks runs over every text, that need a run
	// of characters (gitleaksgate.go): each scans a text holding its run, alone.
	gated []gatedRule
	// keywords finds the line-bound rules' keywords in lower-cased text; byKeyword says, by
	// keyword number, whose they are.
	keywords  *ahocorasick.Trie
	byKeyword [][]int
	// stop are the stop words taken out of the rules' allowlists.
	stop map[string][]*stopWords
	// byPath are the global allowlists that allow a whole file by its path, which the
	// detectors' allowlists no longer check (pathsLast).
	byPath []*gitleaks.Allowlist
}

// newSplitDetector splits the compiled rule set cfg, whose allowlists' stop words stop took out
// (compactStopWords).
func newSplitDetector(cfg gitleaks.Config, stop map[string][]*stopWords) *splitDetector {
	sd := &splitDetector{stop: stop}
	cfg.Allowlists, sd.byPath = pathsLast(cfg.Allowlists)
	byKeyword := map[string][]int{}
	rest := gitleaks.Config{Rules: map[string]gitleaks.Rule{}, Keywords: map[string]struct{}{}, Allowlists: cfg.Allowlists}
	for _, id := range sortedRuleIDs(cfg.Rules) {
		r := cfg.Rules[id]
		span, chars, ok := lineBoundChars(r)
		if !ok {
			span = -1 // the whole text, always
		}
		if g := textGate(r); g != nil {
			sd.gated = append(sd.gated, gatedRule{d: ruleDetector(r, nil, cfg.Allowlists), gate: g})
			continue
		}
		if !windowed[id] {
			rest.Rules[id] = r
			rest.OrderedRules = append(rest.OrderedRules, id)
			for _, k := range r.Keywords {
				rest.Keywords[strings.ToLower(k)] = struct{}{}
			}
			continue
		}
		kw := map[string]struct{}{}
		for _, k := range r.Keywords {
			k = strings.ToLower(k)
			kw[k] = struct{}{}
			if !slices.Contains(byKeyword[k], len(sd.bound)) {
				byKeyword[k] = append(byKeyword[k], len(sd.bound))
			}
		}
		b := lineBoundRule{span: span, chars: chars}
		global := cfg.Allowlists
		if span >= 0 {
			var ok bool
			if r, global, b.lineAllow, ok = withoutLineAllowlists(r, cfg.Allowlists); !ok {
				b.span, r, global = -1, cfg.Rules[id], cfg.Allowlists
			}
		}
		if b.span >= 0 {
			b.gate = runGateOf(r.Regex.String(), slices.Sorted(maps.Keys(kw)))
		}
		b.d = ruleDetector(r, kw, global)
		// The allow comment is read, with lineAllow, on the finding's line in the text.
		b.d.IgnoreGitleaksAllow = b.span >= 0
		sd.bound = append(sd.bound, b)
	}
	sd.whole = detect.NewDetector(rest)
	sd.whole.MaxDecodeDepth = 0
	words := make([]string, 0, len(byKeyword))
	for k := range byKeyword {
		words = append(words, k)
	}
	slices.Sort(words)
	for _, k := range words {
		sd.byKeyword = append(sd.byKeyword, byKeyword[k])
	}
	sd.keywords = ahocorasick.NewTrieBuilder().AddStrings(words).Build()
	return sd
}

// ruleDetector is a detector of rule r alone, with keywords kw and the global allowlists.
func ruleDetector(r gitleaks.Rule, kw map[string]struct{}, global []*gitleaks.Allowlist) *detect.Detector {
	d := detect.NewDetector(gitleaks.Config{
		Rules: map[string]gitleaks.Rule{r.RuleID: r}, Keywords: kw, OrderedRules: []string{r.RuleID}, Allowlists: global,
	})
	d.MaxDecodeDepth = 0
	return d
}

func sortedRuleIDs(rules map[string]gitleaks.Rule) []string {
	ids := make([]string, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// lineBound says whether every match of r starts on a line holding one of r's keywords, and
// how many newlines a match can hold. It decides from the expression's syntax and answers no
// when unsure. Rules gitleaks treats apart (path rules, rules requiring other rules, rules not
// reported alone) are never line-bound.
func lineBound(r gitleaks.Rule) (int, bool) {
	span, _, ok := lineBoundChars(r)
	return span, ok
}

// lineBoundChars is lineBound with the characters a match can hold (nil: any).
func lineBoundChars(r gitleaks.Rule) (int, *charSet, bool) {
	if r.Regex == nil || r.Path != nil || len(r.RequiredRules) > 0 || r.SkipReport || len(r.Keywords) == 0 {
		return 0, nil, false
	}
	var kws []string
	for _, k := range r.Keywords {
		// A non-ASCII keyword may change length when lower-cased; a newline in one would
		// span lines.
		if k == "" || strings.ContainsRune(k, '\n') || !isASCII(k) {
			return 0, nil, false
		}
		kws = append(kws, strings.ToLower(k))
	}
	re, err := syntax.Parse(r.Regex.String(), syntax.Perl)
	if err != nil || hasOp(re, syntax.OpBeginText) {
		return 0, nil, false // a window's start is not the text's
	}
	span := maxNewlines(re)
	if span < 0 || !keywordFirst(re, kws) {
		return 0, nil, false
	}
	cs := &charSet{}
	if !cs.add(re) {
		cs = nil
	}
	return span, cs, true
}

// charSet is a set of characters, as ranges.
type charSet struct {
	ascii  [utf8.RuneSelf]bool
	ranges []rune // pairs, beyond ASCII
}

// add adds the characters a match of re can hold; false when that is any.
func (cs *charSet) add(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			cs.addRange(r, r)
			for f := unicode.SimpleFold(r); re.Flags&syntax.FoldCase != 0 && f != r; f = unicode.SimpleFold(f) {
				cs.addRange(f, f)
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			cs.addRange(re.Rune[i], re.Rune[i+1])
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return false
	}
	for _, sub := range re.Sub {
		if !cs.add(sub) {
			return false
		}
	}
	return true
}

func (cs *charSet) addRange(lo, hi rune) {
	for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
		cs.ascii[r] = true
	}
	if hi >= utf8.RuneSelf {
		cs.ranges = append(cs.ranges, max(lo, utf8.RuneSelf), hi)
	}
}

// holds says whether every character of s is in the set; an invalid byte is U+FFFD, as the
// regexp package reads it.
func (cs *charSet) holds(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf {
			if !cs.ascii[r] {
				return false
			}
		} else if !classHas(cs.ranges, r) {
			return false
		}
	}
	return true
}

func hasOp(re *syntax.Regexp, op syntax.Op) bool {
	if re.Op == op {
		return true
	}
	return slices.ContainsFunc(re.Sub, func(s *syntax.Regexp) bool { return hasOp(s, op) })
}

// maxNewlines is the most newlines a match of re can hold, or -1 when it is unbounded.
func maxNewlines(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return strings.Count(string(re.Rune), "\n")
	case syntax.OpCharClass:
		if classHas(re.Rune, '\n') {
			return 1
		}
		return 0
	case syntax.OpAnyChar:
		return 1
	case syntax.OpCapture:
		return maxNewlines(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxNewlines(s)
			if m < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				n += m
			} else {
				n = max(n, m)
			}
		}
		return n
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		m := maxNewlines(re.Sub[0])
		switch {
		case m <= 0 || re.Op == syntax.OpQuest:
			return m
		case re.Op == syntax.OpRepeat && re.Max >= 0:
			return m * re.Max
		}
		return -1
	}
	return 0 // empty-width assertions, the empty match, AnyCharNotNL
}

func classHas(ranges []rune, r rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= r && r <= ranges[i+1] {
			return true
		}
	}
	return false
}

// keywordFirst says whether every match of re whose first line is ASCII holds one of the
// keywords (lower-cased) before its first newline. Lines with a non-ASCII byte are always
// scanned (keywordLines), since case folding there matches "ſecret" to "secret" where
// lower-casing does not.
func keywordFirst(re *syntax.Regexp, kws []string) bool {
	if words, ok := finiteWords(re, 256); ok {
		return len(words) > 0 && !slices.ContainsFunc(words, func(w string) bool {
			w, _, _ = strings.Cut(w, "\n")
			return !strings.Contains(w, nonASCII) && !slices.ContainsFunc(kws, func(k string) bool { return strings.Contains(w, k) })
		})
	}
	switch re.Op {
	case syntax.OpCapture:
		return keywordFirst(re.Sub[0], kws)
	case syntax.OpAlternate:
		return !slices.ContainsFunc(re.Sub, func(s *syntax.Regexp) bool { return !keywordFirst(s, kws) })
	case syntax.OpConcat:
		// The parser factors "AKIA|ASIA" into A(?:KIA|SIA): the keyword may be in a run of
		// parts.
		for j, s := range re.Sub {
			if keywordFirst(s, kws) {
				return true
			}
			for i := j + 2; i <= len(re.Sub); i++ {
				run := &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[j:i]}
				if _, ok := finiteWords(run, 256); !ok {
					break
				}
				if keywordFirst(run, kws) {
					return true
				}
			}
			if maxNewlines(s) != 0 {
				return false
			}
		}
	}
	return false
}

// nonASCII stands for any non-ASCII character in finiteWords' strings.
const nonASCII = "\x80"

// finiteWords lists the strings re matches, lower-cased, with nonASCII for every non-ASCII
// character, when they are at most limit.
func finiteWords(re *syntax.Regexp, limit int) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf {
				b.WriteString(nonASCII)
			} else {
				b.WriteString(strings.ToLower(string(r)))
			}
		}
		return []string{b.String()}, true
	case syntax.OpCharClass:
		var words []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				if w := strings.ToLower(string(r)); !slices.Contains(words, w) {
					words = append(words, w)
				}
				if len(words) > limit {
					return nil, false
				}
			}
			if re.Rune[i+1] >= utf8.RuneSelf && !slices.Contains(words, nonASCII) {
				words = append(words, nonASCII)
			}
		}
		return words, true
	case syntax.OpCapture:
		return finiteWords(re.Sub[0], limit)
	case syntax.OpQuest:
		words, ok := finiteWords(re.Sub[0], limit)
		return append(words, ""), ok && len(words) < limit
	case syntax.OpAlternate:
		var all []string
		for _, s := range re.Sub {
			words, ok := finiteWords(s, limit)
			if all = append(all, words...); !ok || len(all) > limit {
				return nil, false
			}
		}
		return all, true
	case syntax.OpConcat:
		all := []string{""}
		for _, s := range re.Sub {
			words, ok := finiteWords(s, limit)
			if !ok || len(all)*len(words) > limit {
				return nil, false
			}
			next := make([]string, 0, len(all)*len(words))
			for _, a := range all {
				for _, w := range words {
					next = append(next, a+w)
				}
			}
			all = next
		}
		return all, true
	}
	return nil, false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// detect returns what gitleaks' Detect of the whole rule set returns for fragment (FilePath and
// Raw only), in no set order, and the findings of gitleaks' generic-api-key rule alone.
func (sd *splitDetector) detect(fragment detect.Fragment) (found, generic []report.Finding) {
	found = allowedByStopWords(sd.whole.Detect(fragment), sd.stop)
	text := fragment.Raw
	for _, g := range sd.gated {
		if g.gate.passes(text) {
			found = append(found, allowedByStopWords(g.d.Detect(fragment), sd.stop)...)
		}
	}
	for i, lineSet := range sd.keywordLines(text) {
		var fs []report.Finding
		switch b := sd.bound[i]; {
		case b.span < 0:
			fs = b.d.Detect(fragment)
		case len(lineSet) == 0:
			continue
		default:
			sub, index := windows(text, lineSet, b.span, b.chars)
			fs = b.d.Detect(detect.Fragment{Raw: sub, FilePath: fragment.FilePath})
			last := strings.Count(text, "\n") // the text's last line
			for j := range fs {
				fs[j].StartLine, fs[j].EndLine = index[fs[j].StartLine], index[fs[j].EndLine]
				if last > 0 && fs[j].StartLine == last {
					// gitleaks gives a finding starting on the last line of a text all the
					// text before it as its line.
					fs[j].Line = text[:len(text)-len(sub)+len(fs[j].Line)]
				}
			}
			fs = b.lineAllowed(fs, fragment.FilePath)
		}
		fs = allowedByStopWords(fs, sd.stop)
		if b := sd.bound[i]; b.d.Config.OrderedRules[0] == gitleaksGenericRule {
			generic = fs
		}
		found = append(found, fs...)
	}
	if len(found) > 0 && sd.pathAllowed(fragment.FilePath) {
		return nil, nil
	}
	return filterGeneric(found), generic
}

// pathsLast is allowlists with the paths taken out of those that allow a whole file by its path
// alone (gitleaks' "or" condition), and those. gitleaks checks a file's path against them
// before it scans, on every Detect; the joined expression of its default paths costs tens of
// microseconds a file, more than scanning a file with no keyword. Checked once, after
// detection and only when something was found (pathAllowed), the result is the same: an
// allowed path has no findings, and an "or" allowlist checks a finding by its expressions and
// stop words alone.
func pathsLast(allowlists []*gitleaks.Allowlist) (rest, byPath []*gitleaks.Allowlist) {
	for _, a := range allowlists {
		if a.MatchCondition != gitleaks.AllowlistMatchOr || len(a.Paths) == 0 {
			rest = append(rest, a)
			continue
		}
		byPath = append(byPath, a)
		if len(a.Commits)+len(a.Regexes)+len(a.StopWords) == 0 {
			continue // it allows nothing but paths
		}
		// Not validated, as in compactStopWords: gitleaks then matches the expressions one at
		// a time and the stop words (lower-cased by a's validation) one by one, with the same
		// result and no second copy of a's joined expression and trie.
		rest = append(rest, &gitleaks.Allowlist{
			Description: a.Description, MatchCondition: a.MatchCondition, Commits: a.Commits,
			RegexTarget: a.RegexTarget, Regexes: a.Regexes, StopWords: a.StopWords,
		})
	}
	return rest, byPath
}

// pathAllowed says whether a global allowlist allows the file at path as a whole, as gitleaks
// decides before it scans (a diff's added text has no commit).
func (sd *splitDetector) pathAllowed(path string) bool {
	return path != "" && slices.ContainsFunc(sd.byPath, func(a *gitleaks.Allowlist) bool { return a.PathAllowed(path) })
}

// keyLine is a line of the text a match of a rule may start on: its number, where it starts and
// ends (before its newline), where in it the rule's last keyword starts and where its first
// one ends; from and after are -1 when the line is scanned for its non-ASCII byte.
type keyLine struct{ line, start, end, from, after int }

// keywordLines is, for each line-bound rule, the lines a match of it may start on, in order:
// the lines holding one of its keywords that may start a match (mayStart), and, when some line
// holds one, every line with a non-ASCII byte. It finds the keywords as gitleaks does, in
// lower-cased text, one line at a time.
func (sd *splitDetector) keywordLines(text string) [][]keyLine {
	out := make([][]keyLine, len(sd.bound))
	found := make([]bool, len(sd.bound))     // whether one of the rule's keywords is in text
	onLine := make([]keyLine, len(sd.bound)) // the rules' keywords on the line being read
	for i := range onLine {
		onLine[i].line = -1
	}
	var other []keyLine // lines with a non-ASCII byte
	var buf []byte
	var cur keyLine // the line being read
	walk := func(end, n, pattern int64) bool {
		from, after := int(end-n+1), int(end+1) // in the line
		for _, rule := range sd.byKeyword[pattern] {
			// Walk reports keywords by where they end: the first one ends first.
			if k := &onLine[rule]; k.line != cur.line {
				*k = keyLine{cur.line, cur.start, cur.end, from, after}
			} else {
				k.from = max(k.from, from)
			}
		}
		return true
	}
	for l, start := 0, 0; start <= len(text); l++ {
		end := lineEnd(text, start)
		cur = keyLine{line: l, start: start, end: end}
		line := text[start:end]
		ascii := isASCII(line)
		if ascii {
			buf = append(buf[:0], line...)
			for i, c := range buf {
				if 'A' <= c && c <= 'Z' {
					buf[i] = c + 'a' - 'A'
				}
			}
		} else {
			// Offsets in the lower-cased line are not the line's: the line is scanned
			// whole for every rule with a keyword in text.
			other = append(other, keyLine{l, start, end, -1, -1})
			buf = append(buf[:0], strings.ToLower(line)...)
		}
		sd.keywords.Walk(buf, walk)
		for rule, k := range onLine {
			if k.line == l {
				found[rule] = true
				if ascii && sd.bound[rule].mayStart(line, k) {
					out[rule] = append(out[rule], k)
				}
			}
		}
		start = end + 1
	}
	for rule := range out {
		if found[rule] && len(other) > 0 {
			out[rule] = append(out[rule], other...)
			slices.SortStableFunc(out[rule], func(a, b keyLine) int { return a.line - b.line })
		}
	}
	return out
}

// lineEnd is where the line of text starting at start ends: at its newline or the text's end.
func lineEnd(text string, start int) int {
	if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
		return start + i
	}
	return len(text)
}

// mayStart says whether a match of b may start on keyword line k, whose text is line: when a
// match from it may reach the next line, or b has no gate, or the line's text after its first
// keyword passes b's gate.
func (b lineBoundRule) mayStart(line string, k keyLine) bool {
	return b.gate == nil || crossesLine(line, k, b.chars) || b.gate.passes(line[k.after:])
}

// crossesLine says whether a match starting on keyword line k, whose text is line, may reach
// past its end: only when all of the line from its last keyword on is of chars.
func crossesLine(line string, k keyLine, chars *charSet) bool {
	return chars == nil || k.from < 0 || chars.holds(line[k.from:])
}

// windows is the fragment of text made of the lines a match starting on one of keys (in order)
// can reach, and each of its lines' line in text. A match reaches at most span lines after its
// first, and past the end of a line only when all of the line from the match on is of chars:
// from the last keyword on its first line, the whole line after.
func windows(text string, keys []keyLine, span int, chars *charSet) (string, []int) {
	var b strings.Builder
	var index []int
	if keys[0].line != 0 {
		b.WriteByte('\n') // the first line stays apart: an empty one stands in for it
		index = append(index, -1)
	}
	next := 0 // the first line not yet taken
	for _, k := range keys {
		l, start, end := k.line, k.start, k.end
		crosses := crossesLine(text[start:end], k, chars)
		for n := 0; ; n++ {
			if l >= next {
				b.WriteString(text[start:min(end+1, len(text))]) // with its newline
				index = append(index, l)
				next = l + 1
			}
			if !crosses || n == span || end == len(text) {
				break
			}
			l, start = l+1, end+1
			end = lineEnd(text, start)
			crosses = chars == nil || chars.holds(text[start:end])
		}
	}
	// After a line's newline a fragment holds one more (empty) line; it is not in text.
	return b.String(), append(index, -1)
}

// filterGeneric drops a generic rule's finding when another rule found a secret containing it
// on the same line: gitleaks' Detect does so over all its rules' findings, and here the rules
// ran in several detectors. Dropping again what each detector dropped changes nothing.
func filterGeneric(fs []report.Finding) []report.Finding {
	generic := func(f report.Finding) bool { return strings.Contains(strings.ToLower(f.RuleID), "generic") }
	out := fs[:0:0]
	for _, f := range fs {
		if !generic(f) || !slices.ContainsFunc(fs, func(p report.Finding) bool {
			return f.StartLine == p.StartLine && f.Commit == p.Commit && f.RuleID != p.RuleID &&
				strings.Contains(p.Secret, f.Secret) && !generic(p)
		}) {
			out = append(out, f)
		}
	}
	return out
}

// withoutLineAllowlists is rule r and the global allowlists without the allowlists that read a
// finding's line, and those. It fails when one of them also allows a whole file by its path or
// commit: that must stay in the detector.
func withoutLineAllowlists(r gitleaks.Rule, global []*gitleaks.Allowlist) (gitleaks.Rule, []*gitleaks.Allowlist, []*gitleaks.Allowlist, bool) {
	var line []*gitleaks.Allowlist
	keep := func(als []*gitleaks.Allowlist) ([]*gitleaks.Allowlist, bool) {
		var out []*gitleaks.Allowlist
		for _, a := range als {
			if a.RegexTarget != "line" {
				out = append(out, a)
				continue
			}
			// gitleaks allows a whole file by an allowlist's path or commit when its
			// condition is "or", or "and" with no expression or stop word to check later.
			byFile := len(a.Paths)+len(a.Commits) > 0 && (a.MatchCondition != gitleaks.AllowlistMatchAnd || len(a.Regexes)+len(a.StopWords) == 0)
			if byFile {
				return nil, false
			}
			line = append(line, a)
		}
		return out, true
	}
	g, ok1 := keep(global)
	als, ok2 := keep(r.Allowlists)
	r.Allowlists = als
	return r, g, line, ok1 && ok2
}

// lineAllowed drops the findings that the allow comment or an allowlist of lineAllow allows,
// as gitleaks' detection checks them (checkFindingAllowed), on each finding's line.
func (b lineBoundRule) lineAllowed(fs []report.Finding, path string) []report.Finding {
	out := fs[:0]
	for _, f := range fs {
		allowed := strings.Contains(f.Line, "gitleaks:allow")
		for _, a := range b.lineAllow {
			allowed = allowed || allowsLine(a, f, path)
		}
		if !allowed {
			out = append(out, f)
		}
	}
	return out
}

func allowsLine(a *gitleaks.Allowlist, f report.Finding, path string) bool {
	regex := a.RegexAllowed(f.Line)
	stop, _ := a.ContainsStopWord(f.Secret)
	if a.MatchCondition != gitleaks.AllowlistMatchAnd {
		return regex || stop
	}
	checks := []bool{}
	if len(a.Commits) > 0 {
		commit, _ := a.CommitAllowed("") // a diff's added text has no commit
		checks = append(checks, commit)
	}
	if len(a.Paths) > 0 {
		checks = append(checks, a.PathAllowed(path))
	}
	if len(a.Regexes) > 0 {
		checks = append(checks, regex)
	}
	if len(a.StopWords) > 0 {
		checks = append(checks, stop)
	}
	return !slices.Contains(checks, false)
}
