package pdp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/block"
)

// DefaultMaxWrites bounds the GitHub writes of one run (check-run updates and annotation
// batches included) when the configuration sets no other bound.
const DefaultMaxWrites = 40

// Policy is what the PDP authorises against.
type Policy struct {
	// TriageLabels are the only labels that may be added.
	TriageLabels []string
	// Publication maps a lens name to its publication mode (config.Publication*).
	Publication map[string]string
	// MaxActions bounds distinct actions (targets) per run, as max_actions_per_run says.
	MaxActions int
	// MaxWrites bounds individual writes per run; 0 means DefaultMaxWrites.
	MaxWrites int
	// AllowRequestChanges lets a review use REQUEST_CHANGES; otherwise only COMMENT.
	AllowRequestChanges bool
	// Reserved names targets counted against MaxActions from the start of the run, so that a
	// tight max_actions_per_run spends its last action on them and never on something less
	// important: the gate check must not stay in_progress because a comment used its slot.
	Reserved []string
}

// PolicyFromRepo derives the PDP policy from a repository configuration.
func PolicyFromRepo(r config.Repo) Policy {
	p := Policy{
		TriageLabels: append([]string(nil), r.TriageLabels...),
		Publication:  map[string]string{},
		MaxActions:   r.MaxActionsPerRun,
	}
	for _, l := range r.Policy.Lenses {
		p.Publication[l.Name] = l.Publication
	}
	return p
}

// Config configures one run's PDP.
type Config struct {
	Policy Policy
	// RunID identifies the run in audit records (a job id or delivery id).
	RunID string
	// Sink receives the audit records. Required: without a record there is no action.
	Sink Sink
	// Logger gets one structured line per decision.
	Logger zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Identity is the agent identity in records ("lensgate" when empty).
	Identity string
}

// Decision is the PDP's answer to one proposed action.
type Decision struct {
	Allowed bool
	Kind    Kind
	Reason  string
	// Record is the sealed audit record; its Hash is empty when the sink failed.
	Record Record
}

// PDP authorises the writes of one run. It is safe for concurrent use.
type PDP struct {
	cfg Config

	mu       sync.Mutex
	seq      int
	writes   int
	targets  map[string]bool
	reserved map[string]bool // target -> not used yet
}

// New returns a PDP for one run.
func New(cfg Config) *PDP {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Identity == "" {
		cfg.Identity = "lensgate"
	}
	if cfg.Policy.MaxWrites <= 0 {
		cfg.Policy.MaxWrites = DefaultMaxWrites
	}
	p := &PDP{cfg: cfg, targets: map[string]bool{}, reserved: map[string]bool{}}
	for _, t := range cfg.Policy.Reserved {
		p.reserved[t] = true
	}
	return p
}

// actionsCounted is the actions used so far plus the reserved targets not used yet.
func (p *PDP) actionsCounted() int {
	n := len(p.targets)
	for _, open := range p.reserved {
		if open {
			n++
		}
	}
	return n
}

// Authorize decides one proposed action and audits the decision. An action is allowed only
// when the policy allows it and its audit record was stored.
func (p *PDP) Authorize(ctx context.Context, a Action) Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	reason, ok := p.evaluate(a)
	// The target, not the kind, identifies an action: creating and then completing one check
	// run is one action.
	key := a.Repo + "|" + fmt.Sprint(a.Number) + "|" + a.Target
	newTarget := ok && !p.targets[key]
	// A reserved target was counted from the start; its first use takes no further room.
	if ok && newTarget && !p.reserved[a.Target] && p.cfg.Policy.MaxActions > 0 && p.actionsCounted()+1 > p.cfg.Policy.MaxActions {
		reason, ok = fmt.Sprintf("action cap: %d actions > %d per run", p.actionsCounted()+1, p.cfg.Policy.MaxActions), false
	}
	if ok && p.writes+1 > p.cfg.Policy.MaxWrites {
		reason, ok = fmt.Sprintf("write cap: %d writes > %d per run", p.writes+1, p.cfg.Policy.MaxWrites), false
	}
	d := Decision{Allowed: ok, Kind: a.Kind, Reason: reason}
	rec := p.record(a, d)
	if p.cfg.Sink == nil {
		d.Allowed, d.Reason = false, "no audit sink configured"
	} else if sealed, err := p.cfg.Sink.Append(ctx, rec); err != nil {
		d.Allowed, d.Reason = false, "audit record could not be stored: "+err.Error()
		d.Record = rec
	} else {
		d.Record = sealed
	}
	if d.Allowed {
		p.writes++
		p.targets[key] = true
		if p.reserved[a.Target] {
			p.reserved[a.Target] = false
		}
	}
	p.log(a, d)
	return d
}

// Counts returns the allowed actions (distinct targets) and writes so far.
func (p *PDP) Counts() (actions, writes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.targets), p.writes
}

// evaluate applies the rules in order; the first that denies wins.
func (p *PDP) evaluate(a Action) (string, bool) {
	if forbidden[a.Kind] {
		return fmt.Sprintf("%s is never allowed: lensgate recommends and never merges, pushes, approves or closes", a.Kind), false
	}
	if !allowList[a.Kind] {
		return fmt.Sprintf("action %q is not on the allow-list", a.Kind), false
	}
	if a.Repo == "" || a.Number <= 0 {
		return "action has no repository or number", false
	}
	for _, l := range a.Lenses {
		if reason, ok := p.publicationAllows(a.Kind, l); !ok {
			return reason, false
		}
	}
	switch a.Kind {
	case KindReviewCreate:
		switch strings.ToUpper(a.ReviewEvent) {
		case EventComment:
		case EventRequestChanges:
			if !p.cfg.Policy.AllowRequestChanges {
				return "REQUEST_CHANGES is not allowed by the policy; use COMMENT", false
			}
		case EventApprove:
			return "approving reviews are never allowed", false
		default:
			return fmt.Sprintf("review event %q is not allowed", a.ReviewEvent), false
		}
	case KindLabelsAdd:
		if len(a.Labels) == 0 {
			return "no labels to add", false
		}
		for _, l := range a.Labels {
			if !containsFold(p.cfg.Policy.TriageLabels, l) {
				return fmt.Sprintf("label %q is not in triage_labels", l), false
			}
		}
	case KindReactionAdd:
		if !reactions[a.Reaction] {
			return fmt.Sprintf("reaction %q is not allowed", a.Reaction), false
		}
	case KindDisclosure:
		if reason, ok := disclosureOnly(a.BodyBefore, a.BodyAfter); !ok {
			return reason, false
		}
	}
	return "allowed by policy", true
}

var reactions = map[string]bool{"+1": true, "-1": true, "eyes": true, "confused": true, "rocket": true, "hooray": true, "heart": true, "laugh": true}

// publicationAllows checks that a lens's publication mode permits a kind of write. The gate
// check run and the advisory comment summarise every lens, so they are always permitted.
func (p *PDP) publicationAllows(k Kind, lens string) (string, bool) {
	mode, ok := p.cfg.Policy.Publication[lens]
	if !ok {
		return fmt.Sprintf("lens %q is not in the policy", lens), false
	}
	switch k {
	case KindCheckRunCreate, KindCheckRunUpdate, KindCommentUpsert, KindCommentDedupe, KindDisclosure:
		return "", true
	case KindDelegateRequest, KindReviewersRequest:
		// Asking the bot a lens is delegated to is how that lens runs, whatever it publishes.
		return "", true
	case KindReviewCreate:
		if mode == config.PublicationReview || mode == config.PublicationInline {
			return "", true
		}
	case KindReactionAdd:
		if mode == config.PublicationReaction {
			return "", true
		}
	case KindLabelsAdd:
		return "", true
	}
	return fmt.Sprintf("lens %q publishes as %q, not as %s", lens, mode, k), false
}

// disclosureOnly allows a body edit only when everything outside the disclosure block stays
// byte for byte what it was: the body cores (block replaced by its token) must match, with a
// body that had no block compared as if the empty block had been appended.
func disclosureOnly(before, after string) (string, bool) {
	prepared, err := block.Prepare(before)
	if err != nil {
		return "current body is ambiguous: " + err.Error(), false
	}
	if _, err := block.Inner(after); err != nil {
		return "new body has no single disclosure block: " + err.Error(), false
	}
	b, err := block.BodyCore(prepared)
	if err != nil {
		return "current body is ambiguous: " + err.Error(), false
	}
	c, err := block.BodyCore(after)
	if err != nil {
		return "new body is ambiguous: " + err.Error(), false
	}
	if string(b) != string(c) {
		return "body edit reaches outside the disclosure block", false
	}
	return "", true
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

func (p *PDP) record(a Action, d Decision) Record {
	verdict, taken := "deny", "none"
	if d.Allowed {
		verdict, taken = "allow", string(a.Kind)
	}
	size := 0
	if a.Kind == KindDisclosure || a.Kind == KindBodyEdit {
		size = len(a.BodyAfter)
	}
	return Record{
		Schema:              AuditSchema,
		Kind:                "action",
		TS:                  p.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
		Agent:               Agent{Identity: p.cfg.Identity, Role: "review"},
		AgentID:             p.cfg.Identity,
		Action:              "publish." + string(a.Kind),
		Target:              Target{Repo: a.Repo, PR: a.Number, Commit: a.HeadSHA, Object: a.Target},
		AuthorizingDecision: "pdp " + verdict + ": " + d.Reason,
		RunID:               p.cfg.RunID,
		Outcome:             Verdict{Verdict: verdict, ActionTaken: taken},
		Reasoning:           d.Reason,
		Payload: Payload{
			Source: a.Source, Lenses: a.Lenses, ReviewEvent: a.ReviewEvent, Labels: a.Labels,
			Reaction: a.Reaction, BodyBytes: size, Seq: p.seq, Actions: len(p.targets), Writes: p.writes,
			Tokens: a.Tokens,
		},
	}
}

func (p *PDP) log(a Action, d Decision) {
	ev := p.cfg.Logger.Info()
	if !d.Allowed {
		ev = p.cfg.Logger.Warn()
	}
	ev.Str("pdp_action", string(a.Kind)).Str("repository", a.Repo).Int("number", a.Number).
		Str("head_sha", a.HeadSHA).Str("target", a.Target).Str("source", a.Source).
		Bool("allowed", d.Allowed).Str("reason", d.Reason).Str("audit_hash", d.Record.Hash).
		Str("run_id", p.cfg.RunID).Msg("pdp decision")
}
