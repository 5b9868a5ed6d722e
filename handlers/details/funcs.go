package details

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/lensgate/lensgate/internal/digest"
)

// status is a state shown as a word and an icon, never by colour alone; the class only adds
// colour. The icons are inline SVG drawn with currentColor: they need no font (an emoji such as
// the hourglass renders as a missing-glyph box where no emoji font is installed) and no
// resource the page's Content-Security-Policy would block.
type status struct {
	Icon        template.HTML
	Word, Class string
}

// Inline SVG icons, 1em square; presentation attributes only (the CSP forbids style attributes).
const (
	svgOpen  = `<svg class="icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false">`
	iconOK   = svgOpen + `<path d="M2.5 8.5l3.5 3.5 7.5-8" fill="none" stroke="currentColor" stroke-width="2.2"/></svg>`
	iconFail = svgOpen + `<path d="M3.5 3.5l9 9M12.5 3.5l-9 9" fill="none" stroke="currentColor" stroke-width="2.2"/></svg>`
	iconWait = svgOpen + `<circle cx="8" cy="8" r="6" fill="none" stroke="currentColor" stroke-width="1.8"/><path d="M8 4.5V8l2.5 2" fill="none" stroke="currentColor" stroke-width="1.8"/></svg>`
	iconInfo = svgOpen + `<circle cx="8" cy="8" r="3" fill="currentColor"/></svg>`
)

func statusOf(s string) status {
	w := plain(s)
	switch strings.ToLower(s) {
	case "passed", "success", "ok", "yes", "allow", "accept", "match", "complete":
		return status{iconOK, w, "st-ok"}
	case "failed", "failure", "fail", "no", "deny", "reject", "mismatch", "broken":
		return status{iconFail, w, "st-fail"}
	case "pending", "action_required", "in_progress", "queued", "partial":
		return status{iconWait, w, "st-wait"}
	}
	return status{iconInfo, w, "st-info"}
}

var funcs = template.FuncMap{
	"status":     statusOf,
	"plain":      plain,
	"explain":    explain,
	"codeRows":   codeRows,
	"obsRows":    observationCodeRows,
	"obsVerdict": func(v string) string { return observationVerdicts[v] },
	"axisInfo":   func(name string) string { return axisInfo[name] },
	"short":      digest.Short,
	"rate": func(q QualityRow) string {
		if r, ok := q.AddressedRate(); ok {
			return fmt.Sprintf("%.0f %%", r*100)
		}
		return "—"
	},
	"join": strings.Join,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"dur": func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() || b.Before(a) {
			return "—"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	},
	"role": func(required bool) string {
		if required {
			return "required"
		}
		return "advisory"
	},
	"add": func(a, b int) int { return a + b },
}
