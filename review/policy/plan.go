package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/digest"
)

// Plan is the ordered list of lenses to run for a policy, with the digest that binds receipts to
// it. Build it with NewPlan; the zero value is not a valid plan.
type Plan struct {
	Version     int
	Aggregation string
	Items       []Item
	// Required names the blocking lenses in the policy's required order.
	Required []string
	digest   string
}

// Item is one lens of a plan.
type Item struct {
	Name        string
	Preset      string
	Instruction string
	Required    bool
	Outcome     string // config.OutcomeReview or config.OutcomeAdvisory
	Publication string
	// Paths and PathInstructions are lensgate's per-path keys (.asdd.yml). They enter the
	// canonical plan only when set, so a policy without them keeps YAGA's plan_digest.
	Paths            []string
	PathInstructions []config.PathInstruction
}

// Role is "required" or "advisory", as shown in the text plan.
func (it Item) Role() string {
	if it.Required {
		return "required"
	}
	return "advisory"
}

// NewPlan builds the plan of a policy. It re-checks the invariants a parsed policy already
// satisfies, so a policy built in code cannot yield a plan YAGA would reject.
func NewPlan(p config.Policy) (Plan, error) {
	if p.Version != 1 {
		return Plan{}, configErr("Agent review policy version must be integer 1")
	}
	if p.Aggregation != config.AggregationAllRequired && p.Aggregation != config.AggregationAnyRequired {
		return Plan{}, configErr("Agent review policy aggregation is invalid")
	}
	if len(p.Lenses) == 0 || len(p.Lenses) > config.MaxLenses {
		return Plan{}, configErr(fmt.Sprintf("Agent review policy must have 1 to %d lenses", config.MaxLenses))
	}
	if len(p.Required) == 0 || len(p.Required) > config.MaxLenses {
		return Plan{}, configErr("Agent review policy must name at least one required lens")
	}
	pl := Plan{Version: p.Version, Aggregation: p.Aggregation, Required: slices.Clone(p.Required)}
	seen := map[string]bool{}
	for _, l := range p.Lenses {
		if !config.ValidName(l.Name) || !config.ValidName(l.Preset) {
			return Plan{}, configErr("Agent review policy has an invalid lens or preset name")
		}
		if seen[l.Name] {
			return Plan{}, configErr("duplicate Agent review lens: " + l.Name)
		}
		seen[l.Name] = true
		if config.IsBlank(l.Instruction) || strings.ContainsRune(l.Instruction, 0) || len(l.Instruction) > config.MaxInstructionBytes {
			return Plan{}, configErr(fmt.Sprintf("agent-review.agents.%s.instruction is oversized or unsafe", l.Name))
		}
		req := slices.Contains(p.Required, l.Name)
		if req && l.Outcome != config.OutcomeReview {
			return Plan{}, configErr(fmt.Sprintf("agent-review.required lens %s must have outcome review", l.Name))
		}
		pl.Items = append(pl.Items, Item{
			Name: l.Name, Preset: l.Preset, Instruction: l.Instruction,
			Required: req, Outcome: l.Outcome, Publication: l.Publication,
			Paths: slices.Clone(l.Paths), PathInstructions: slices.Clone(l.PathInstructions),
		})
	}
	for i, r := range p.Required {
		if !seen[r] || slices.Index(p.Required, r) != i {
			return Plan{}, configErr("Agent review policy required lenses are unknown or repeated")
		}
	}
	for _, it := range pl.Items {
		if !slices.Contains([]string{config.OutcomeReview, config.OutcomeAdvisory}, it.Outcome) ||
			!slices.Contains([]string{config.PublicationComment, config.PublicationInline, config.PublicationReaction, config.PublicationReview, config.PublicationCheck}, it.Publication) {
			return Plan{}, configErr(fmt.Sprintf("Agent review lens %s has an invalid outcome or publication", it.Name))
		}
	}
	pl.digest = digestOf(pl)
	return pl, nil
}

// Digest is the plan_digest: SHA-256 of the canonical plan document, 64 lowercase hex digits.
func (p Plan) Digest() string { return p.digest }

// CanonicalJSON is the exact byte string the digest is computed over.
func (p Plan) CanonicalJSON() []byte {
	var b strings.Builder
	writeCompact(&b, p.digestDoc())
	return []byte(b.String())
}

// Item returns the plan item of a lens.
func (p Plan) Item(name string) (Item, bool) {
	for _, it := range p.Items {
		if it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}

func (p Plan) digestDoc() obj {
	lenses := make([]any, len(p.Items))
	for i, it := range p.Items {
		lenses[i] = it.doc()
	}
	return obj{{"version", p.Version}, {"aggregation", p.Aggregation}, {"lenses", lenses}}
}

func (it Item) doc() obj {
	o := obj{
		{"name", it.Name}, {"preset", it.Preset}, {"instruction", it.Instruction},
		{"required", it.Required}, {"outcome", it.Outcome}, {"publication", it.Publication},
	}
	// Only a lens that uses the per-path keys carries them: every other plan document, and so
	// its digest, stays byte for byte YAGA's.
	if len(it.Paths) > 0 {
		o = append(o, kv{"paths", strings2any(it.Paths)})
	}
	if len(it.PathInstructions) > 0 {
		pis := make([]any, len(it.PathInstructions))
		for i, pi := range it.PathInstructions {
			pis[i] = obj{{"paths", strings2any(pi.Paths)}, {"instruction", pi.Instruction}}
		}
		o = append(o, kv{"path_instructions", pis})
	}
	return o
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func digestOf(p Plan) string {
	var b strings.Builder
	size := 64
	for _, it := range p.Items {
		size += 128 + len(it.Name) + len(it.Preset) + len(it.Instruction) + len(it.Publication)
	}
	b.Grow(size)
	writeCompact(&b, p.digestDoc())
	return digest.SHA256Hex([]byte(b.String()))
}

// Template is the receipt scaffold of the plan: every lens pending, in plan order.
func (p Plan) Template() Receipt {
	r := Receipt{Version: p.Version, PlanDigest: p.digest, Results: make([]Result, len(p.Items))}
	for i, it := range p.Items {
		r.Results[i] = Result{Lens: it.Name, Outcome: Pending}
	}
	return r
}
