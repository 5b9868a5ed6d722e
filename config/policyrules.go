package config

import (
	"fmt"
	"slices"
	"strings"
)

// ValidName reports whether s is a valid lens or preset name: ^[a-z][a-z0-9-]{0,63}$.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// IsPySpace reports whether r is whitespace for Python's str.isspace, which the policy model
// uses for blank checks. It differs from unicode.IsSpace by including U+001C..U+001F.
func IsPySpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0d, r >= 0x1c && r <= 0x20, r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// IsBlank reports whether s is empty after stripping Python whitespace.
func IsBlank(s string) bool {
	return strings.TrimFunc(s, IsPySpace) == ""
}

var (
	policyRootKeys = []string{"version", "required", "aggregation", "agents"}
	lensKeys       = []string{"preset", "instruction", "outcome", "publication"}
	// yamlLensKeys adds lensgate's own lens keys, which .asdd.yml may carry and a YAGA file
	// may not; they are not part of the plan, so the plan digest stays YAGA's.
	yamlLensKeys = append(append([]string{}, lensKeys...), "outcome_on_findings", "independent", "paths", "path_instructions")
	onFindings   = []string{OnFindingsFail, OnFindingsPass}
	aggregations = []string{AggregationAllRequired, AggregationAnyRequired}
	outcomes     = []string{OutcomeReview, OutcomeAdvisory}
	publications = []string{PublicationComment, PublicationInline, PublicationReaction, PublicationReview, PublicationCheck}
)

// policyCtx carries how messages are written for one file format. TOML messages follow YAGA
// byte for byte (prefix "agent-review", suffix " in {path}"); YAML messages carry a line number
// instead, so the suffix is empty.
type policyCtx struct {
	file   string
	prefix string // "agent-review" or "agent_review"
	sfx    string // " in {path}" or ""
	// all collects every problem (YAML); otherwise validation stops at the first one, in
	// YAGA's order (TOML).
	all   bool
	probs Problems
}

func (c *policyCtx) add(line, col int, key, msg, hint string) {
	c.probs = append(c.probs, Problem{File: c.file, Line: line, Column: col, Key: key, Message: msg, Hint: hint})
}

// assign renders "key = value" in TOML and "key: value" in YAML, for hints.
func (c *policyCtx) assign(key, value string) string {
	if c.sfx != "" {
		return "write " + key + " = " + value
	}
	return "write " + key + ": " + value
}

func (c *policyCtx) stop() bool { return !c.all && len(c.probs) > 0 }

// unknownKeys records the keys of table n (at path) that are not in known and reports whether
// there were any. Unless every problem is wanted, only the first in sorted order is recorded, as
// YAGA does.
func (c *policyCtx) unknownKeys(n *node, path string, known []string) bool {
	var unknown []entry
	for _, e := range n.entries {
		if !slices.Contains(known, e.key) {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) == 0 {
		return false
	}
	if !c.all {
		slices.SortFunc(unknown, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		unknown = unknown[:1]
	}
	for _, e := range unknown {
		c.add(e.line, e.col, path+"."+e.key, fmt.Sprintf("%s has unknown key %s%s", path, e.key, c.sfx), suggestHint(e.key, known))
	}
	return true
}

// decodePolicy validates the agent-review table n and builds the Policy. Problems are recorded in
// c; the returned policy is only meaningful when none were.
func decodePolicy(c *policyCtx, n *node, line, col int) Policy {
	p := Policy{Aggregation: AggregationAllRequired}
	pre := c.prefix
	if n.kind != kMap {
		c.add(line, col, pre, fmt.Sprintf("%s must be a table%s", pre, c.sfx), "write version, aggregation, required and agents under it")
		return p
	}
	// Unknown root keys: YAGA reports the first in sorted order.
	if c.unknownKeys(n, pre, policyRootKeys) && c.stop() {
		return p
	}

	// version
	if e, ok := n.get("version"); !ok || e.val.kind != kInt || e.val.big || e.val.i != 1 {
		l, co := line, col
		if ok {
			l, co = e.val.line, e.val.col
		}
		c.add(l, co, pre+".version", fmt.Sprintf("%s.version must be integer 1%s", pre, c.sfx), c.assign("version", "1")+" (an integer, not a string or float)")
		if c.stop() {
			return p
		}
	} else {
		p.Version = 1
	}

	// aggregation
	if e, ok := n.get("aggregation"); ok {
		if e.val.kind != kString || !slices.Contains(aggregations, e.val.str) {
			c.add(e.val.line, e.val.col, pre+".aggregation", fmt.Sprintf("%s.aggregation is invalid%s", pre, c.sfx), "use all-required or any-required"+didYouMean(e.val, aggregations))
			if c.stop() {
				return p
			}
		} else {
			p.Aggregation = e.val.str
		}
	}

	// agents
	agentsOK := true
	ae, ok := n.get("agents")
	switch {
	case !ok || ae.val.kind != kMap || len(ae.val.entries) == 0:
		l, co := line, col
		if ok {
			l, co = ae.val.line, ae.val.col
		}
		c.add(l, co, pre+".agents", fmt.Sprintf("%s.agents must be a nonempty table%s", pre, c.sfx), "define at least one lens under agents")
		agentsOK = false
	case len(ae.val.entries) > MaxLenses:
		c.add(ae.val.line, ae.val.col, pre+".agents", fmt.Sprintf("%s.agents exceeds %d entries%s", pre, MaxLenses, c.sfx), fmt.Sprintf("keep at most %d lenses", MaxLenses))
		agentsOK = false
	}
	if c.stop() {
		return p
	}
	if agentsOK {
		seen := map[string]bool{}
		for _, e := range ae.val.entries {
			lens, ok := decodeLens(c, e, seen)
			if c.stop() {
				return p
			}
			if ok {
				p.Lenses = append(p.Lenses, lens)
			}
		}
	}

	// required
	re, ok := n.get("required")
	if !ok || re.val.kind != kList || len(re.val.items) == 0 || len(re.val.items) > MaxLenses {
		l, co := line, col
		if ok {
			l, co = re.val.line, re.val.col
		}
		c.add(l, co, pre+".required", fmt.Sprintf("%s.required must be a nonempty bounded array%s", pre, c.sfx), fmt.Sprintf("list 1 to %d lens names that block the gate", MaxLenses))
		return p
	}
	seen := map[string]bool{}
	for _, it := range re.val.items {
		key := pre + ".required"
		switch {
		case it.kind != kString || !ValidName(it.str):
			c.add(it.line, it.col, key, fmt.Sprintf("required Agent review lens name is invalid%s", c.sfx), "use a lens name defined under agents")
		case seen[it.str]:
			c.add(it.line, it.col, key, fmt.Sprintf("%s.required repeats %s%s", pre, it.str, c.sfx), "name each required lens once")
		default:
			seen[it.str] = true
			if !agentsOK {
				p.Required = append(p.Required, it.str)
				continue
			}
			idx := slices.IndexFunc(p.Lenses, func(l Lens) bool { return l.Name == it.str })
			names := lensNames(ae.val)
			switch {
			case idx < 0 && slices.Contains(names, it.str):
				// The lens is defined but invalid; that problem is already reported.
			case idx < 0:
				hint := "define it under agents or remove it; defined lenses: " + strings.Join(names, ", ")
				if s := nearest(it.str, names); s != "" {
					hint = fmt.Sprintf("did you mean %q?", s)
				}
				c.add(it.line, it.col, key, fmt.Sprintf("%s.required names unknown lens %s%s", pre, it.str, c.sfx), hint)
			case p.Lenses[idx].Outcome != OutcomeReview:
				c.add(it.line, it.col, key, fmt.Sprintf("%s.required lens %s must have outcome review", pre, it.str), "remove it from required or set its outcome to review")
			default:
				p.Lenses[idx].Required = true
				p.Required = append(p.Required, it.str)
			}
		}
		if c.stop() {
			return p
		}
	}
	return p
}

func lensNames(agents *node) []string {
	names := make([]string, 0, len(agents.entries))
	for _, e := range agents.entries {
		names = append(names, e.key)
	}
	return names
}

func decodeLens(c *policyCtx, e entry, seen map[string]bool) (Lens, bool) {
	pre := c.prefix
	name := e.key
	if !ValidName(name) {
		c.add(e.line, e.col, pre+".agents."+name, fmt.Sprintf("%s lens name is invalid%s", pre, c.sfx), "lens names are 1-64 characters: a lower-case letter, then lower-case letters, digits or '-'")
		return Lens{}, false
	}
	if seen[name] {
		c.add(e.line, e.col, pre+".agents."+name, fmt.Sprintf("duplicate Agent review lens: %s", name), "define each lens once")
		return Lens{}, false
	}
	seen[name] = true
	base := pre + ".agents." + name
	v := e.val
	if v.kind != kMap {
		c.add(v.line, v.col, base, fmt.Sprintf("%s must be a table%s", base, c.sfx), "give the lens preset and instruction keys")
		return Lens{}, false
	}
	ok := true
	known := lensKeys
	if c.all {
		known = yamlLensKeys
	}
	if c.unknownKeys(v, base, known) {
		if c.stop() {
			return Lens{}, false
		}
		ok = false
	}
	l := Lens{Name: name, Outcome: OutcomeReview, Publication: PublicationReview}
	if pe, has := v.get("preset"); !has || pe.val.kind != kString || !ValidName(pe.val.str) {
		line, col := posOf(v, pe, has)
		c.add(line, col, base+".preset", fmt.Sprintf("%s.preset is invalid%s", base, c.sfx), "a preset is a lower-case label such as security or codex")
		if c.stop() {
			return Lens{}, false
		}
		ok = false
	} else {
		l.Preset = pe.val.str
	}
	ie, has := v.get("instruction")
	line, col := posOf(v, ie, has)
	switch {
	case !has || ie.val.kind != kString || IsBlank(ie.val.str):
		c.add(line, col, base+".instruction", fmt.Sprintf("%s.instruction is required%s", base, c.sfx), "describe what the lens must look for")
		ok = false
	case strings.ContainsRune(ie.val.str, 0) || len(ie.val.str) > MaxInstructionBytes:
		c.add(line, col, base+".instruction", fmt.Sprintf("%s.instruction is oversized or unsafe", base), fmt.Sprintf("keep it under %d UTF-8 bytes and without NUL characters", MaxInstructionBytes+1))
		ok = false
	default:
		l.Instruction = ie.val.str
	}
	if c.stop() {
		return Lens{}, false
	}
	if oe, has := v.get("outcome"); has {
		if oe.val.kind != kString || !slices.Contains(outcomes, oe.val.str) {
			c.add(oe.val.line, oe.val.col, base+".outcome", fmt.Sprintf("%s.outcome is invalid%s", base, c.sfx), "use review or advisory"+didYouMean(oe.val, outcomes))
			if c.stop() {
				return Lens{}, false
			}
			ok = false
		} else {
			l.Outcome = oe.val.str
		}
	}
	if ie, has := v.get("independent"); has && c.all {
		if ie.val.kind != kBool {
			c.add(ie.val.line, ie.val.col, base+".independent", fmt.Sprintf("%s.independent must be true or false", base), "independent: true judges the lens in its own model call")
			ok = false
		} else {
			l.Independent = ie.val.b
		}
	}
	if pe, has := v.get("publication"); has {
		if pe.val.kind != kString || !slices.Contains(publications, pe.val.str) {
			c.add(pe.val.line, pe.val.col, base+".publication", fmt.Sprintf("%s.publication is invalid%s", base, c.sfx), "use comment, inline, reaction, review or check"+didYouMean(pe.val, publications))
			if c.stop() {
				return Lens{}, false
			}
			ok = false
		} else {
			l.Publication = pe.val.str
		}
	}
	if c.all && !c.lensExtensions(v, base, &l) {
		ok = false
	}
	return l, ok
}

// lensExtensions reads the lens keys of .asdd.yml that YAGA's TOML does not have, after
// publication (independent is read before it), into l; it reports whether they were valid.
func (c *policyCtx) lensExtensions(v *node, base string, l *Lens) bool {
	ok := true
	if pe, has := v.get("paths"); has {
		globs, good := c.globList(pe.val, base+".paths")
		ok = ok && good
		l.Paths = globs
	}
	if pe, has := v.get("path_instructions"); has {
		pis, good := c.pathInstructions(pe.val, base+".path_instructions")
		ok = ok && good
		l.PathInstructions = pis
	}
	if fe, has := v.get("outcome_on_findings"); has {
		if fe.val.kind != kString || !slices.Contains(onFindings, fe.val.str) {
			c.add(fe.val.line, fe.val.col, base+".outcome_on_findings", fmt.Sprintf("%s.outcome_on_findings is invalid", base), "use fail or pass"+didYouMean(fe.val, onFindings))
			ok = false
		} else {
			l.OutcomeOnFindings = fe.val.str
		}
	}
	return ok
}

// pathInstructions reads a lens's path_instructions list.
func (c *policyCtx) pathInstructions(v *node, key string) ([]PathInstruction, bool) {
	if v.kind != kList || len(v.items) == 0 || len(v.items) > MaxPathInstructions {
		c.add(v.line, v.col, key, fmt.Sprintf("%s must be a list of 1 to %d entries", key, MaxPathInstructions), "each entry has paths (a list of globs) and instruction")
		return nil, false
	}
	ok := true
	var out []PathInstruction
	for i, it := range v.items {
		ik := fmt.Sprintf("%s[%d]", key, i)
		if it.kind != kMap {
			c.add(it.line, it.col, ik, ik+" must be a table with paths and instruction", "paths: [\"services/api/**\"], instruction: \"...\"")
			ok = false
			continue
		}
		if c.unknownKeys(it, ik, []string{"paths", "instruction"}) {
			ok = false
		}
		var pi PathInstruction
		ge, hasG := it.get("paths")
		if !hasG {
			c.add(it.line, it.col, ik+".paths", ik+".paths is required", "a list of globs such as [\"services/api/**\"]")
			ok = false
		} else {
			globs, good := c.globList(ge.val, ik+".paths")
			ok = ok && good
			pi.Paths = globs
		}
		ie, hasI := it.get("instruction")
		switch {
		case !hasI || ie.val.kind != kString || IsBlank(ie.val.str):
			c.add(it.line, it.col, ik+".instruction", ik+".instruction is required", "what the lens must also look for in these files")
			ok = false
		case strings.ContainsRune(ie.val.str, 0) || len(ie.val.str) > MaxInstructionBytes:
			c.add(ie.val.line, ie.val.col, ik+".instruction", ik+".instruction is oversized or unsafe", fmt.Sprintf("keep it under %d UTF-8 bytes and without NUL characters", MaxInstructionBytes+1))
			ok = false
		default:
			pi.Instruction = ie.val.str
		}
		out = append(out, pi)
	}
	return out, ok
}

// globList reads a non-empty list of repository-relative globs.
func (c *policyCtx) globList(v *node, key string) ([]string, bool) {
	if v.kind != kList || len(v.items) == 0 || len(v.items) > MaxPathGlobs {
		c.add(v.line, v.col, key, fmt.Sprintf("%s must be a list of 1 to %d globs", key, MaxPathGlobs), "for example [\"services/api/**\", \"*.go\"]")
		return nil, false
	}
	var out []string
	for _, it := range v.items {
		if it.kind != kString || IsBlank(it.str) {
			c.add(it.line, it.col, key, key+" entries must be non-empty strings", "quote each glob")
			return nil, false
		}
		if hint := checkGlob(it.str); hint != "" {
			c.add(it.line, it.col, key, fmt.Sprintf("%s has an unusable glob %q", key, it.str), hint)
			return nil, false
		}
		out = append(out, it.str)
	}
	return out, true
}

func posOf(parent *node, e entry, has bool) (int, int) {
	if has {
		return e.val.line, e.val.col
	}
	return parent.line, parent.col
}

func didYouMean(v *node, candidates []string) string {
	if v.kind != kString {
		return ""
	}
	if s := nearest(v.str, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

func suggestHint(key string, candidates []string) string {
	if s := nearest(key, candidates); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return "remove it; known keys are " + strings.Join(candidates, ", ")
}

// Nearest returns the candidate closest to s by edit distance, or "" when none is close enough
// to be a plausible typo of it.
func Nearest(s string, candidates []string) string { return nearest(s, candidates) }

// nearest returns the candidate closest to s by edit distance, or "" when none is close enough
// to be a plausible typo.
func nearest(s string, candidates []string) string {
	if len(s) > 64 {
		return "" // far longer than any key or value it could be a typo of
	}
	best, bestD := "", 1<<30
	ls := strings.ToLower(strings.ReplaceAll(s, "-", "_"))
	for _, c := range candidates {
		lc := strings.ToLower(strings.ReplaceAll(c, "-", "_"))
		d := editDistance(ls, lc)
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len([]rune(s))/3)
	if bestD <= limit && bestD < len([]rune(s)) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		return 1 << 20
	}
	// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
	// transpositions ("pubilcation") each cost one.
	pp := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(rb)]
}
