package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits of the .asdd.yml decoder. A configuration is small; anything larger is refused rather
// than expanded (alias bombs) or recursed into (deep nesting).
const (
	MaxRepoFileBytes = 1 << 20
	maxYAMLDepth     = 64
	maxYAMLValues    = 100_000
)

// ParseRepo decodes an .asdd.yml strictly and applies the defaults. On failure the error is a
// Problems value listing every problem found, each with file:line, message and hint.
func ParseRepo(filename string, data []byte) (*Repo, error) {
	r, probs := CheckRepo(filename, data)
	if len(probs) > 0 {
		return nil, probs
	}
	return r, nil
}

// CheckRepo is ParseRepo for diagnostics: it returns every problem together with whatever could
// be decoded (never nil), so a report can also list the keys lensgate ignores.
func CheckRepo(filename string, data []byte) (*Repo, Problems) {
	r := DefaultRepo()
	r.Source = filename
	d := &decoder{file: filename}
	root, ok := d.parse(data)
	if !ok {
		return r, d.probs
	}
	if root.kind == kNull {
		return r, nil // an empty file means every default
	}
	if root.kind != kMap {
		d.add(root.line, root.col, "", "the configuration must be a mapping of keys to values", "start with keys such as runtime: builtin")
		return r, d.probs
	}
	specPathsSet := false
	d.section(r, root, "", asddSchema, &specPathsSet)
	if !specPathsSet {
		r.SpecPaths = DefaultSpecPaths(r.SpecTool)
	}
	slices.SortStableFunc(d.probs, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	if d.truncated {
		d.probs = append(d.probs, Problem{File: d.file, Message: fmt.Sprintf("more problems follow; only the first %d are shown", maxProblems), Hint: "fix these and check again"})
	}
	return r, d.probs
}

type decoder struct {
	file      string
	probs     Problems
	values    int
	truncated bool
}

// maxProblems bounds the report of one file; past it the work of finding hints is skipped too.
const maxProblems = 100

func (d *decoder) full() bool { return len(d.probs) >= maxProblems }

func (d *decoder) add(line, col int, key, msg, hint string) {
	if d.full() {
		d.truncated = true
		return
	}
	d.probs = append(d.probs, Problem{File: d.file, Line: line, Column: col, Key: key, Message: msg, Hint: hint})
}

// parse turns YAML bytes into a node tree, reporting syntax, size and structure problems.
func (d *decoder) parse(data []byte) (*node, bool) {
	if len(data) > MaxRepoFileBytes {
		d.add(0, 0, "", fmt.Sprintf("the file exceeds %d bytes", MaxRepoFileBytes), "a configuration is a few kilobytes; remove what does not belong")
		return nil, false
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		d.add(0, 0, "", "the file is not valid UTF-8", "save it as UTF-8")
		return nil, false
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return &node{kind: kNull}, true
	}
	if err == nil {
		// A second document would be silently ignored by a lenient reader; refuse it.
		var extra yaml.Node
		if e2 := dec.Decode(&extra); !errors.Is(e2, io.EOF) {
			line := 0
			if e2 == nil {
				line = extra.Line
			}
			d.add(line, 0, "", "the file holds more than one YAML document", "keep one document; remove the second '---' and what follows")
			return nil, false
		}
	}
	if err != nil {
		line := 0
		msg := err.Error()
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			if l, rest, ok := yamlErrLine(msg); ok {
				line, msg = l, rest
			}
		}
		d.add(line, 0, "", "YAML syntax error: "+msg, "check indentation and quoting around this line")
		return nil, false
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &node{kind: kNull}, true
	}
	n := d.convert(doc.Content[0], 0)
	if n == nil {
		return nil, false
	}
	return n, true
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlErrLine(msg string) (int, string, bool) {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, strings.TrimPrefix(msg, "yaml: "), true
	}
	var line int
	fmt.Sscanf(m[1], "%d", &line)
	return line, m[2], true
}

// convert maps a yaml.Node to a node, resolving aliases under a global value budget.
func (d *decoder) convert(y *yaml.Node, depth int) *node {
	d.values++
	if d.values > maxYAMLValues {
		if d.values == maxYAMLValues+1 {
			d.add(y.Line, y.Column, "", fmt.Sprintf("the document expands to more than %d values", maxYAMLValues), "avoid deeply repeated aliases")
		}
		return nil
	}
	if depth > maxYAMLDepth {
		d.add(y.Line, y.Column, "", fmt.Sprintf("values are nested deeper than %d levels", maxYAMLDepth), "flatten the structure")
		d.values = maxYAMLValues + 2 // stop everywhere
		return nil
	}
	n := &node{line: y.Line, col: y.Column}
	switch y.Kind {
	case yaml.AliasNode:
		if y.Alias == nil {
			n.kind = kOther
			return n
		}
		a := d.convert(y.Alias, depth+1)
		if a == nil {
			return nil
		}
		c := *a
		c.line, c.col = y.Line, y.Column
		return &c
	case yaml.MappingNode:
		n.kind = kMap
		seen := map[string]int{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				d.add(k.Line, k.Column, "", "a mapping key must be a plain scalar", "write keys as simple names")
				continue
			}
			if prev, dup := seen[k.Value]; dup {
				d.add(k.Line, k.Column, k.Value, fmt.Sprintf("key %q is repeated (first defined on line %d)", k.Value, prev), "keep one definition")
				continue
			}
			seen[k.Value] = k.Line
			val := d.convert(v, depth+1)
			if val == nil {
				return nil
			}
			n.entries = append(n.entries, entry{key: k.Value, line: k.Line, col: k.Column, val: val})
		}
	case yaml.SequenceNode:
		n.kind = kList
		for _, it := range y.Content {
			v := d.convert(it, depth+1)
			if v == nil {
				return nil
			}
			n.items = append(n.items, v)
		}
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!str":
			n.kind, n.str = kString, y.Value
			n.quoted = y.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0
		case "!!int":
			var i int64
			if err := y.Decode(&i); err != nil {
				n.kind = kOther
			} else {
				n.kind, n.i = kInt, i
			}
		case "!!float":
			n.kind = kFloat
		case "!!bool":
			var b bool
			if err := y.Decode(&b); err != nil {
				n.kind = kOther
			} else {
				n.kind, n.b = kBool, b
			}
		case "!!null":
			n.kind = kNull
		default:
			n.kind = kOther
		}
	default:
		n.kind = kOther
	}
	return n
}

// field describes one .asdd.yml key: its type, constraints, whether lensgate acts on it, and
// where its value goes.
type field struct {
	name     string
	kind     fieldKind
	enum     []string
	min, max int64
	ignored  bool // accepted for ASDD compatibility, not acted on
	children []*field
	check    func(string) string // extra check of a string or list item; returns a hint when bad
	set      func(r *Repo, v any)
}

type fieldKind int

const (
	fString fieldKind = iota
	fInt
	fBool
	fStrings
	fSection
	fAnyMap
	fPolicy
	// fWordOrStrings is one word of the field's enum or a list of strings (context.go).
	fWordOrStrings
)

func (k fieldKind) String() string {
	switch k {
	case fString:
		return "a string"
	case fInt:
		return "an integer"
	case fBool:
		return "true or false"
	case fStrings:
		return "a list of strings"
	case fSection, fPolicy:
		return "a mapping"
	case fAnyMap:
		return "a mapping"
	case fWordOrStrings:
		return "a word or a list of strings"
	}
	return "?"
}

func (f *field) allIgnored() bool {
	if f.kind != fSection {
		return f.ignored
	}
	for _, c := range f.children {
		if !c.allIgnored() {
			return false
		}
	}
	return true
}

// section decodes the mapping n against the schema fields, recording problems and ignored keys.
func (d *decoder) section(r *Repo, n *node, prefix string, fields []*field, specPathsSet *bool) {
	for _, e := range n.entries {
		key := prefix + e.key
		f := lookup(fields, e.key)
		if f == nil {
			if d.full() {
				d.truncated = true
				continue
			}
			if e.key == "<<" {
				// YAML 1.1 merge keys are not part of YAML 1.2, which the decoder follows.
				d.add(e.line, e.col, key, "YAML merge keys (<<) are not supported",
					"write the keys out in this section; anchors and aliases of whole values do work")
				continue
			}
			d.add(e.line, e.col, key, fmt.Sprintf("unknown key %q", key), unknownHint(prefix, e.key, fields))
			continue
		}
		if e.val.kind == kNull && f.kind != fPolicy {
			continue // "key:" with no value keeps the default
		}
		if f.allIgnored() {
			r.Ignored = append(r.Ignored, KeyRef{Key: key, Line: e.line})
		}
		switch f.kind {
		case fSection:
			if e.val.kind != kMap {
				d.wrongType(e, key, f)
				continue
			}
			var sub []*field
			sub = f.children
			before := len(r.Ignored)
			d.section(r, e.val, key+".", sub, specPathsSet)
			if f.allIgnored() {
				r.Ignored = r.Ignored[:before] // the section itself is already listed
			}
		case fPolicy:
			c := &policyCtx{file: d.file, prefix: key, all: true}
			p := decodePolicy(c, e.val, e.line, e.col)
			for _, pr := range c.probs {
				d.add(pr.Line, pr.Column, pr.Key, pr.Message, pr.Hint)
			}
			if len(c.probs) == 0 {
				r.Policy, r.PolicyDefaulted = p, false
			}
		case fAnyMap:
			if e.val.kind != kMap {
				d.wrongType(e, key, f)
				continue
			}
			f.set(r, plain(e.val))
		case fString:
			if e.val.kind != kString {
				d.wrongType(e, key, f)
				continue
			}
			if f.enum != nil && !slices.Contains(f.enum, e.val.str) {
				hint := "use one of: " + strings.Join(f.enum, ", ")
				if s := nearest(e.val.str, f.enum); s != "" {
					hint = fmt.Sprintf("did you mean %q? (one of: %s)", s, strings.Join(f.enum, ", "))
				}
				d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s: %q is not an allowed value", key, e.val.str), hint)
				continue
			}
			if f.check != nil {
				if hint := f.check(e.val.str); hint != "" {
					d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s: %q is not valid", key, e.val.str), hint)
					continue
				}
			}
			f.set(r, e.val.str)
		case fInt:
			if e.val.kind != kInt {
				d.wrongType(e, key, f)
				continue
			}
			if e.val.i < f.min || e.val.i > f.max {
				d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s: %d is out of range", key, e.val.i), fmt.Sprintf("use a whole number from %d to %d", f.min, f.max))
				continue
			}
			f.set(r, int(e.val.i))
		case fBool:
			if e.val.kind != kBool {
				d.wrongType(e, key, f)
				continue
			}
			f.set(r, e.val.b)
		case fWordOrStrings:
			d.wordOrStrings(r, e, key, f)
		case fStrings:
			list, ok := d.stringList(e, key, f)
			if ok {
				f.set(r, list)
				if key == "spec_paths" {
					*specPathsSet = true
				}
			}
		}
	}
}

func (d *decoder) stringList(e entry, key string, f *field) ([]string, bool) {
	if e.val.kind != kList {
		d.wrongType(e, key, f)
		return nil, false
	}
	out := make([]string, 0, len(e.val.items))
	ok := true
	for i, it := range e.val.items {
		if it.kind != kString || it.str == "" {
			d.add(it.line, it.col, fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("%s[%d] must be a non-empty string, found %s", key, i, it.kind), "quote the value: - \"text\"")
			ok = false
			continue
		}
		if f.check != nil {
			if hint := f.check(it.str); hint != "" {
				d.add(it.line, it.col, fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("%s[%d]: %q is not valid", key, i, it.str), hint)
				ok = false
				continue
			}
		}
		out = append(out, it.str)
	}
	return out, ok
}

func (d *decoder) wrongType(e entry, key string, f *field) {
	hint := "write " + f.kind.String()
	switch f.kind {
	case fStrings:
		hint = fmt.Sprintf("write a list, e.g. %s: [\"a\", \"b\"], or one item per line starting with -", e.key)
	case fInt:
		hint = "write a whole number"
	case fBool:
		hint = "write true or false"
	case fString:
		hint = "quote the value"
	}
	if e.val.quoted && (f.kind == fInt || f.kind == fBool) {
		hint += " without quotes"
	}
	if d, err := time.ParseDuration(e.val.str); err == nil && f.kind == fInt && e.val.kind == kString && strings.HasSuffix(key, "_seconds") {
		hint = fmt.Sprintf("write the number of seconds without a unit: %s: %d", e.key, int64(d.Seconds()))
	}
	d.add(e.val.line, e.val.col, key, fmt.Sprintf("%s must be %s, found %s", key, f.kind, e.val.kind), hint)
}

func lookup(fields []*field, name string) *field {
	for _, f := range fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// unknownHint suggests the nearest key at this level, or the same key at another level.
func unknownHint(prefix, key string, fields []*field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	if s := nearest(key, names); s != "" {
		return fmt.Sprintf("did you mean %q?", prefix+s)
	}
	var elsewhere []string
	for _, p := range allKeyPaths(asddSchema, "") {
		if strings.HasSuffix(p, "."+key) || p == key {
			if p != prefix+key {
				elsewhere = append(elsewhere, p)
			}
		}
	}
	if len(elsewhere) > 0 {
		return fmt.Sprintf("did you mean %q? it belongs under a different section", elsewhere[0])
	}
	if prefix == "" {
		return "remove it; see docs/configuration.md for the accepted keys"
	}
	return "remove it; keys accepted here: " + strings.Join(names, ", ")
}

// allKeyPaths lists every dotted key path of the schema.
func allKeyPaths(fields []*field, prefix string) []string {
	var out []string
	for _, f := range fields {
		out = append(out, prefix+f.name)
		if f.kind == fSection {
			out = append(out, allKeyPaths(f.children, prefix+f.name+".")...)
		}
	}
	return out
}

// KeyPaths returns every dotted .asdd.yml key lensgate accepts, and for each whether it is
// ignored (accepted for ASDD compatibility but not acted on).
func KeyPaths() map[string]bool {
	out := map[string]bool{}
	var walk func(fs []*field, prefix string)
	walk = func(fs []*field, prefix string) {
		for _, f := range fs {
			out[prefix+f.name] = f.allIgnored()
			if f.kind == fSection {
				walk(f.children, prefix+f.name+".")
			}
		}
	}
	walk(asddSchema, "")
	return out
}

// plain converts a node to plain Go values for free-form sections.
func plain(n *node) any {
	switch n.kind {
	case kMap:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			m[e.key] = plain(e.val)
		}
		return m
	case kList:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = plain(it)
		}
		return l
	case kString:
		return n.str
	case kInt:
		return n.i
	case kBool:
		return n.b
	}
	return nil
}

// Constructors that keep the schema table below readable.

func strField(name string, ignored bool, enum []string, set func(*Repo, string)) *field {
	return &field{name: name, kind: fString, enum: enum, ignored: ignored, set: func(r *Repo, v any) { set(r, v.(string)) }}
}

func intField(name string, ignored bool, lo, hi int64, set func(*Repo, int)) *field {
	return &field{name: name, kind: fInt, min: lo, max: hi, ignored: ignored, set: func(r *Repo, v any) { set(r, v.(int)) }}
}

func boolField(name string, ignored bool, set func(*Repo, bool)) *field {
	return &field{name: name, kind: fBool, ignored: ignored, set: func(r *Repo, v any) { set(r, v.(bool)) }}
}

func listField(name string, ignored bool, check func(string) string, set func(*Repo, []string)) *field {
	return &field{name: name, kind: fStrings, ignored: ignored, check: check, set: func(r *Repo, v any) { set(r, v.([]string)) }}
}

func mapField(name string, set func(*Repo, map[string]any)) *field {
	return &field{name: name, kind: fAnyMap, ignored: true, set: func(r *Repo, v any) { set(r, v.(map[string]any)) }}
}

func sectionField(name string, children ...*field) *field {
	return &field{name: name, kind: fSection, children: children}
}

const maxInt = math.MaxInt32

var runtimeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func checkRuntime(s string) string {
	if !runtimeNameRE.MatchString(s) {
		return "a runtime is an adapter name of letters, digits, '.', '_' or '-' (for example builtin)"
	}
	return ""
}

var specGlobRE = regexp.MustCompile(`^[A-Za-z0-9._/*-]+$`)

func checkSpecGlob(s string) string {
	if !specGlobRE.MatchString(s) || strings.Contains(s, "..") {
		return "spec globs may use only letters, digits, '.', '_', '/', '*' and '-', and never '..'"
	}
	return ""
}

func checkGlob(s string) string {
	if strings.ContainsRune(s, 0) || strings.HasPrefix(s, "/") || slices.Contains(strings.Split(s, "/"), "..") {
		return "write a repository-relative glob without '..' or a leading '/'"
	}
	return ""
}

var sinkRepoRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// asddSchema is every key of .asdd.yml: the ASDD keys (acted on or ignored) plus lensgate's
// ignore_paths and agent_review.
var asddSchema = []*field{
	strField("standard_version", true, nil, func(r *Repo, v string) { r.StandardVersion = v }),
	{name: "runtime", kind: fString, check: checkRuntime, set: func(r *Repo, v any) { r.Runtime = v.(string) }},
	strField("merge_posture", false, []string{"advisory", "earned-automerge"}, func(r *Repo, v string) { r.MergePosture = v }),
	intField("max_actions_per_run", false, 1, maxInt, func(r *Repo, v int) { r.MaxActionsPerRun = v }),
	sectionField("models",
		strField("developer", true, nil, func(r *Repo, v string) { r.Models.Developer = v }),
		strField("test_author", true, nil, func(r *Repo, v string) { r.Models.TestAuthor = v }),
		strField("test_runner", true, nil, func(r *Repo, v string) { r.Models.TestRunner = v }),
		strField("reviewer", false, nil, func(r *Repo, v string) { r.Models.Reviewer = v }),
		strField("documentation", true, nil, func(r *Repo, v string) { r.Models.Documentation = v }),
		strField("interaction", true, nil, func(r *Repo, v string) { r.Models.Interaction = v }),
		strField("tester", true, nil, func(r *Repo, v string) { r.Models.Tester = v }),
		intField("max_tokens_per_review", false, 0, maxInt, func(r *Repo, v int) { r.Models.MaxTokensPerReview = v }),
		listField("exclude_paths", false, checkGlob, func(r *Repo, v []string) { r.Models.ExcludePaths = v }),
	),
	sectionField("merge_reviewer",
		boolField("enabled", true, func(r *Repo, v bool) { r.MergeReviewer.Enabled = v }),
		strField("posture", true, []string{"review-only", "earned-automerge"}, func(r *Repo, v string) { r.MergeReviewer.Posture = v }),
		listField("auto_merge_class", true, checkGlob, func(r *Repo, v []string) { r.MergeReviewer.AutoMergeClass = v }),
	),
	listField("protected_paths", false, checkGlob, func(r *Repo, v []string) { r.ProtectedPaths = v }),
	protectedRequireField,
	listField("ignore_paths", false, checkGlob, func(r *Repo, v []string) { r.IgnorePaths = v }),
	fixturePathsField, vendoredPathsField,
	mapField("conventions", func(r *Repo, v map[string]any) { r.Conventions = v }),
	listField("agents", true, nil, func(r *Repo, v []string) { r.Agents = v }),
	sectionField("review", append([]*field{
		intField("max_diff_lines", false, 0, maxInt, func(r *Repo, v int) { r.Review.MaxDiffLines = v }),
		intField("timeout_seconds", false, 1, 3600, func(r *Repo, v int) { r.Review.TimeoutSeconds = v }),
		intField("max_chunks", false, 1, MaxChunks, func(r *Repo, v int) { r.Review.MaxChunks = v }),
	}, reviewQualityFields()...)...),
	strField("spec_tool", false, []string{"builtin", "openspec"}, func(r *Repo, v string) { r.SpecTool = v }),
	listField("spec_paths", false, checkSpecGlob, func(r *Repo, v []string) { r.SpecPaths = v }),
	boolField("require_spec", false, func(r *Repo, v bool) { r.RequireSpec = v }),
	intField("max_open_prs_per_author", false, 0, maxInt, func(r *Repo, v int) { r.MaxOpenPRsPerAuthor = v }),
	listField("lanes", false, nil, func(r *Repo, v []string) {
		if len(v) > 0 { // absent or empty means the default lanes
			r.Lanes = v
		}
	}),
	listField("triage_labels", false, nil, func(r *Repo, v []string) { r.TriageLabels = v }),
	sectionField("intake",
		listField("definition_of_ready", true, nil, func(r *Repo, v []string) { r.Intake.DefinitionOfReady = v }),
		boolField("completeness_gate", true, func(r *Repo, v bool) { r.Intake.CompletenessGate = v }),
		strField("spec_context", true, []string{"docs", "codebase"}, func(r *Repo, v string) { r.Intake.SpecContext = v }),
	),
	sectionField("identity",
		strField("authoring", true, nil, func(r *Repo, v string) { r.Identity.Authoring = v }),
		strField("proposing", true, nil, func(r *Repo, v string) { r.Identity.Proposing = v }),
		strField("provider", true, nil, func(r *Repo, v string) { r.Identity.Provider = v }),
	),
	sectionField("claim",
		boolField("one_active_per_item", true, func(r *Repo, v bool) { r.Claim.OneActivePerItem = v }),
		intField("max_active_per_identity", true, 0, maxInt, func(r *Repo, v int) { r.Claim.MaxActivePerIdentity = v }),
		intField("ttl_hours", true, 0, maxInt, func(r *Repo, v int) { r.Claim.TTLHours = v }),
	),
	sectionField("contributor_review",
		boolField("enabled", true, func(r *Repo, v bool) { r.ContributorReview.Enabled = v }),
		strField("posture", true, []string{"advisory"}, func(r *Repo, v string) { r.ContributorReview.Posture = v }),
	),
	sectionField("insights",
		boolField("enabled", true, func(r *Repo, v bool) { r.Insights.Enabled = v }),
		strField("activity_log", true, nil, func(r *Repo, v string) { r.Insights.ActivityLog = v }),
	),
	sectionField("audit",
		strField("sink", true, []string{"none", "repo", "command"}, func(r *Repo, v string) { r.Audit.Sink = v }),
		&field{name: "sink_repo", kind: fString, ignored: true, check: func(s string) string {
			if !sinkRepoRE.MatchString(s) {
				return "write owner/name of a private repository"
			}
			return ""
		}, set: func(r *Repo, v any) { r.Audit.SinkRepo = v.(string) }},
		strField("sink_command", true, nil, func(r *Repo, v string) { r.Audit.SinkCommand = v }),
		intField("retention_days", true, 0, maxInt, func(r *Repo, v int) { r.Audit.RetentionDays = v }),
	),
	listField("review_override_owners", true, nil, func(r *Repo, v []string) { r.ReviewOverrideOwners = v }),
	walkthroughField(), askField(),
	mapField("dev_council", func(r *Repo, v map[string]any) { r.DevCouncil = v }),
	sectionField("delegate",
		&field{name: "timeout", kind: fString, check: checkDelegateTimeout, set: func(r *Repo, v any) {
			r.Delegate.Timeout, _ = time.ParseDuration(v.(string))
		}},
		strField("approval", false, []string{DelegateApprovalExternal, DelegateApprovalNever}, func(r *Repo, v string) { r.Delegate.Approval = v }),
	),
	sectionField("dismissals",
		boolField("by_author", false, func(r *Repo, v bool) { r.Dismissals.ByAuthor = v }),
	),
	contextField(),
	{name: "agent_review", kind: fPolicy},
}

// checkDelegateTimeout accepts a duration from one minute to six hours.
func checkDelegateTimeout(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Minute || d > 6*time.Hour {
		return "write a duration from 1m to 6h, for example 15m"
	}
	return ""
}
