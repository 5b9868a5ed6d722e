package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
)

// Format is an output format of the policy commands.
type Format string

const (
	FormatText   Format = "text"
	FormatJSON   Format = "json"
	FormatGitHub Format = "github"
)

// ParseFormat lower-cases s as Python does (FoldFormat) and accepts it when it is one of allowed.
func ParseFormat(s string, allowed ...Format) (Format, error) {
	f := FoldFormat(s)
	for _, a := range allowed {
		if f == a {
			return f, nil
		}
	}
	if len(allowed) == 3 {
		return "", inputErr("output format must be text, json, or github")
	}
	return "", inputErr("output format must be text or json")
}

// Bounds of untrusted text in output.
const (
	maxTextSummary    = 1000 // code points of a summary in text output
	maxTextInstr      = 4096 // code points of an instruction in text output
	maxAnnotationData = 500  // code points of an annotation message
	maxAnnotationProp = 200  // code points of an annotation title
)

// SafeText makes untrusted text safe for one terminal line: control, format and surrogate
// characters become '?', whitespace runs collapse to one space, and the result is cut to
// maximum code points with a trailing ellipsis.
func SafeText(s string, maximum int) string {
	var b strings.Builder
	for _, r := range s {
		if isHidden(r) {
			b.WriteByte('?')
		} else {
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.FieldsFunc(b.String(), config.IsPySpace), " ")
	if utf8.RuneCountInString(out) > maximum {
		return string([]rune(out)[:maximum-1]) + "…"
	}
	return out
}

// isHidden reports Unicode categories Cc, Cf and Cs (U+FFFD stands for an invalid sequence and
// is printable).
func isHidden(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || (r >= 0xd800 && r <= 0xdfff)
}

// escapeAnnotation applies GitHub workflow-command escaping to untrusted text: hidden
// characters other than CR and LF become '?', then %, CR and LF are percent-encoded.
func escapeAnnotation(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '%':
			b.WriteString("%25")
		case r == '\r':
			b.WriteString("%0D")
		case r == '\n':
			b.WriteString("%0A")
		case isHidden(r):
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// AnnotationData escapes and bounds an annotation message.
func AnnotationData(s string) string { return boundEscaped(escapeAnnotation(s), maxAnnotationData) }

// AnnotationProperty escapes and bounds an annotation property such as title.
func AnnotationProperty(s string) string {
	e := strings.NewReplacer(":", "%3A", ",", "%2C").Replace(escapeAnnotation(s))
	return boundEscaped(e, maxAnnotationProp)
}

// boundEscaped cuts escaped text to bound code points without splitting a %XX escape.
func boundEscaped(s string, bound int) string {
	rs := []rune(s)
	if len(rs) <= bound {
		return s
	}
	cut := bound - 1
	for i := cut - 1; i >= 0 && i >= cut-2; i-- {
		if rs[i] == '%' {
			cut = i
			break
		}
	}
	return string(rs[:cut]) + "…"
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// RenderCheck renders the result of a successful policy check.
func RenderCheck(p Plan, f Format) string {
	if f == FormatJSON {
		return indentJSON(obj{
			{"version", p.Version}, {"status", "passed"}, {"aggregation", p.Aggregation},
			{"lens_count", len(p.Items)}, {"required_count", len(p.Required)},
			{"required", p.Required}, {"plan_digest", p.digest},
		})
	}
	return fmt.Sprintf("Agent review policy passed: %d lens(es), %d required (%s), aggregation %s.\n",
		len(p.Items), len(p.Required), joinNames(p.Required), p.Aggregation)
}

// RenderPlan renders the plan.
func RenderPlan(p Plan, f Format) string {
	if f == FormatJSON {
		items := make([]any, len(p.Items))
		for i, it := range p.Items {
			items[i] = it.doc()
		}
		return indentJSON(obj{
			{"version", p.Version}, {"aggregation", p.Aggregation}, {"lenses", items}, {"plan_digest", p.digest},
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agent review plan: %d lens(es), aggregation %s.\n", len(p.Items), p.Aggregation)
	fmt.Fprintf(&b, "Plan digest: %s\n", p.digest)
	for _, it := range p.Items {
		fmt.Fprintf(&b, "- %s [%s, %s] via %s\n", it.Name, it.Role(), it.Outcome, it.Preset)
		fmt.Fprintf(&b, "  %s\n", SafeText(it.Instruction, maxTextInstr))
	}
	return b.String()
}

// RenderTemplate renders the receipt scaffold of the plan.
func RenderTemplate(p Plan) string { return p.Template().Doc() }

// RenderEvaluation renders an evaluation as text, JSON or GitHub workflow commands.
func RenderEvaluation(ev Evaluation, f Format) string {
	switch f {
	case FormatJSON:
		results := make([]any, len(ev.Results))
		for i, r := range ev.Results {
			results[i] = obj{{"lens", r.Lens}, {"outcome", string(r.Outcome)}, {"summary", r.Summary}}
		}
		return indentJSON(obj{
			{"version", ev.Version}, {"plan_digest", ev.PlanDigest}, {"state", string(ev.State)},
			{"blocking_failures", ev.BlockingFailures}, {"blocking_pending", ev.BlockingPending},
			{"advisory_failures", ev.AdvisoryFailures}, {"advisory_pending", ev.AdvisoryPending},
			{"results", results},
		})
	case FormatGitHub:
		return renderGitHub(ev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agent review result: %s.\n", ev.State)
	fmt.Fprintf(&b, "Plan digest: %s\n", ev.PlanDigest)
	for _, r := range ev.Results {
		if r.Summary != nil {
			fmt.Fprintf(&b, "- %s: %s: %s\n", r.Lens, r.Outcome, SafeText(*r.Summary, maxTextSummary))
		} else {
			fmt.Fprintf(&b, "- %s: %s\n", r.Lens, r.Outcome)
		}
	}
	for _, l := range []struct {
		title string
		names []string
	}{
		{"Blocking failures", ev.BlockingFailures}, {"Blocking pending", ev.BlockingPending},
		{"Advisory failures", ev.AdvisoryFailures}, {"Advisory pending", ev.AdvisoryPending},
	} {
		if len(l.names) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", l.title, joinNames(l.names))
		}
	}
	return b.String()
}

func renderGitHub(ev Evaluation) string {
	byLens := make(map[string]Result, len(ev.Results))
	for _, r := range ev.Results {
		byLens[r.Lens] = r
	}
	var b strings.Builder
	annotate := func(level string, names []string, outcome Outcome) {
		for _, name := range names {
			detail := "no result was returned"
			if r, ok := byLens[name]; ok {
				detail = "provider returned no summary"
				if r.Summary != nil {
					detail = *r.Summary
				}
			}
			fmt.Fprintf(&b, "::%s title=%s::%s\n", level,
				AnnotationProperty("YAGA Agent review: "+name), AnnotationData(string(outcome)+": "+detail))
		}
	}
	annotate("error", ev.BlockingFailures, Failed)
	annotate("error", ev.BlockingPending, Pending)
	annotate("warning", ev.AdvisoryFailures, Failed)
	annotate("warning", ev.AdvisoryPending, Pending)
	summary := fmt.Sprintf("Agent review result: %s; %d blocking failure(s), %d blocking pending, %d advisory failure(s), %d advisory pending; plan %s.",
		ev.State, len(ev.BlockingFailures), len(ev.BlockingPending), len(ev.AdvisoryFailures), len(ev.AdvisoryPending), ev.PlanDigest)
	fmt.Fprintf(&b, "::notice title=YAGA Agent review::%s\n", AnnotationData(summary))
	return b.String()
}

// RenderError renders an error document for stderr in the given format: a JSON document, one
// GitHub error command, or one text line. Any format other than json and github gives text.
func RenderError(err error, f Format) string {
	pe := AsError(err)
	msg := SafeText(pe.Message, 1000)
	switch f {
	case FormatJSON:
		return indentJSON(obj{{"schema_version", 1}, {"error", obj{{"kind", string(pe.Kind)}, {"message", msg}}}})
	case FormatGitHub:
		return "::error title=YAGA Agent review::" + strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(msg) + "\n"
	}
	return fmt.Sprintf("YAGA %s error: %s\n", pe.Kind, msg)
}
