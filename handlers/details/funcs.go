package details

import (
	"html/template"
	"strings"
	"time"

	"github.com/lensgate/lensgate/internal/digest"
)

// status is a state shown as a word and a symbol, never by colour alone; the class only adds
// colour.
type status struct {
	Symbol, Word, Class string
}

func statusOf(s string) status {
	switch strings.ToLower(s) {
	case "passed", "success", "ok", "yes", "allow", "accept", "match", "complete":
		return status{"✔", s, "st-ok"}
	case "failed", "failure", "fail", "no", "deny", "mismatch", "broken":
		return status{"✘", s, "st-fail"}
	case "pending", "action_required", "in_progress", "queued", "partial":
		return status{"⏳", s, "st-wait"}
	}
	return status{"•", s, "st-info"}
}

var funcs = template.FuncMap{
	"status": statusOf,
	"short":  digest.Short,
	"join":   strings.Join,
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
