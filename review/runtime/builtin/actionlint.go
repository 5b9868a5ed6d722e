package builtin

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/rhysd/actionlint"

	"github.com/lensgate/lensgate/review/runtime"
)

// Workflow rules. Each is reported at most once per file (with all its lines), and only when
// one of its lines is added by the change, as reviewdog filters a linter's output to the diff.
const (
	ruleUntrustedInput = "workflow-untrusted-input"
	rulePRTCheckout    = "workflow-pull-request-target-checkout"
	ruleUnpinned       = "workflow-unpinned-action"
	ruleSecretToTag    = "workflow-secret-to-unpinned-action"
	ruleWriteAll       = "workflow-permissions-write-all"
	ruleNoPermissions  = "workflow-permissions-missing"
	// actionlint's own checks are reported as "actionlint-<kind>" (syntax-check, expression,
	// action, job-needs, runner-label…).
	actionlintPrefix = "actionlint-"
)

// wfFinding is a workflow finding before the diff filter: it is kept when any of its anchor
// lines is an added line.
type wfFinding struct {
	runtime.Finding
	anchors []int
}

// lintWorkflow runs actionlint and the workflow-security rules over a whole workflow file and
// keeps what touches an added line. security holds findings for the security lenses, lint
// actionlint's correctness findings. parsed is false when the file is not a well-formed workflow
// (actionlint reports a syntax error, so its tree may miss parts of the file): security is then
// empty and the caller applies the line patterns instead, while lint still says what is wrong.
func lintWorkflow(path string, content []byte, added map[int]bool) (security, lint []runtime.Finding, parsed bool) {
	// The file is untrusted: should the linter fail on it in a way it does not report, the line
	// patterns still review it.
	defer func() {
		if recover() != nil {
			security, lint, parsed = nil, nil, false
		}
	}()
	wf, parseErrs := actionlint.Parse(content)
	parsed = wf != nil && len(parseErrs) == 0
	errs, err := runActionlint(content)
	if err != nil {
		// actionlint only fails on internal errors; the parse errors are still worth reporting.
		errs = parseErrs
	}
	var all []wfFinding
	for _, e := range errs {
		f := fromActionlint(path, e)
		if f.Rule == ruleUntrustedInput && !parsed {
			continue // the line patterns report it
		}
		all = append(all, f)
	}
	if parsed {
		all = append(all, securityRules(path, wf)...)
	}
	for _, f := range all {
		if !touches(f.anchors, added) {
			continue
		}
		if strings.HasPrefix(f.Rule, actionlintPrefix) {
			lint = append(lint, f.Finding)
		} else {
			security = append(security, f.Finding)
		}
	}
	return security, lint, parsed
}

// runActionlint lints content with actionlint's own rules. The path is "<stdin>" so that
// actionlint reads nothing from the local disk (no project config, no local actions): the
// file under review is untrusted and the process's working directory is unrelated to it.
// External checkers (shellcheck, pyflakes) are not run. The color option stays at its default:
// "never" would set a global of the color package on every call, a data race between reviews
// running at once; the output is discarded either way.
func runActionlint(content []byte) ([]*actionlint.Error, error) {
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{LogWriter: io.Discard, WorkingDir: "/"})
	if err != nil {
		return nil, fmt.Errorf("set up actionlint: %w", err)
	}
	errs, err := l.Lint("<stdin>", content, nil)
	if err != nil {
		return nil, fmt.Errorf("actionlint: %w", err)
	}
	return errs, nil
}

func touches(anchors []int, added map[int]bool) bool {
	for _, n := range anchors {
		if added[n] {
			return true
		}
	}
	return false
}

// fromActionlint turns one actionlint error into a finding. Untrusted input in a script is a
// security finding; everything else actionlint reports is a correctness problem of the
// workflow (a type error, an unknown input, a job that needs a missing job) and is medium.
func fromActionlint(path string, e *actionlint.Error) wfFinding {
	msg := e.Message
	if e.Kind == "expression" && strings.Contains(msg, "potentially untrusted") {
		expr := msg
		if i := strings.Index(msg, " is potentially untrusted"); i > 0 {
			expr = strings.Trim(msg[:i], `"`)
		}
		return wfFinding{Finding: runtime.Finding{
			Rule: ruleUntrustedInput, Severity: runtime.SeverityHigh, Path: path, Line: e.Line,
			Title: "Untrusted input expanded inside a script",
			Message: "`" + expr + "` can be set by whoever opens the pull request or issue, and it is " +
				"substituted into the script before it runs, so a crafted title, branch name or body " +
				"becomes code. Fix: pass it through env: and use the quoted variable (\"$VAR\").",
			Key: expr,
		}, anchors: []int{e.Line}}
	}
	return wfFinding{Finding: runtime.Finding{
		Rule: actionlintPrefix + e.Kind, Severity: runtime.SeverityMedium, Path: path, Line: e.Line,
		Title:   "Workflow problem (actionlint " + e.Kind + ")",
		Message: msg + ".",
		Key:     msg,
	}, anchors: []int{e.Line}}
}

// triggers lists the events a workflow runs on.
func triggers(wf *actionlint.Workflow) map[string]*actionlint.Pos {
	out := map[string]*actionlint.Pos{}
	for _, ev := range wf.On {
		if we, ok := ev.(*actionlint.WebhookEvent); ok && we.Hook != nil {
			out[we.Hook.Value] = we.Hook.Pos
		}
	}
	return out
}

// trigger is a privileged event a workflow runs on: pull_request_target, or workflow_run (which
// runs after a fork's workflow with the base repository's secrets).
type trigger struct {
	name string
	line int
}

func privilegedTrigger(on map[string]*actionlint.Pos) *trigger {
	for _, name := range []string{"pull_request_target", "workflow_run"} {
		if pos, ok := on[name]; ok {
			t := &trigger{name: name}
			if pos != nil {
				t.line = pos.Line
			}
			return t
		}
	}
	return nil
}

// securityRules applies the workflow-security rules actionlint does not have.
func securityRules(path string, wf *actionlint.Workflow) []wfFinding {
	var out []wfFinding
	on := triggers(wf)
	trig := privilegedTrigger(on)
	if f, ok := writeAll(path, wf.Permissions); ok {
		out = append(out, f)
	}
	ids := make([]string, 0, len(wf.Jobs))
	for id := range wf.Jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		job := wf.Jobs[id]
		if job == nil {
			continue
		}
		if f, ok := writeAll(path, job.Permissions); ok {
			out = append(out, f)
		}
		if wf.Permissions == nil && job.Permissions == nil && job.Pos != nil {
			out = append(out, wfFinding{Finding: runtime.Finding{
				Rule: ruleNoPermissions, Severity: runtime.SeverityLow, Path: path, Line: job.Pos.Line,
				Title: "No permissions: for the workflow token",
				Message: "Neither the workflow nor job `" + id + "` sets permissions:, so the job's token gets the " +
					"repository's default, often write access to everything. Fix: add `permissions: {contents: read}` " +
					"at the top and grant more per job only where needed.",
				Key: id,
			}, anchors: []int{job.Pos.Line}})
		}
		if job.WorkflowCall != nil && job.WorkflowCall.Uses != nil {
			if f, ok := unpinned(path, job.WorkflowCall.Uses, nil, nil); ok {
				out = append(out, f)
			}
		}
		jobSecrets := envSecrets(job.Env)
		for _, st := range job.Steps {
			out = append(out, stepRules(path, st, trig, jobSecrets)...)
		}
	}
	return out
}

func writeAll(path string, p *actionlint.Permissions) (wfFinding, bool) {
	if p == nil || p.All == nil || p.All.Value != "write-all" {
		return wfFinding{}, false
	}
	line := p.All.Pos.Line
	return wfFinding{Finding: runtime.Finding{
		Rule: ruleWriteAll, Severity: runtime.SeverityHigh, Path: path, Line: line,
		Title: "Workflow token granted write-all",
		Message: "`permissions: write-all` gives the token write access to the whole repository, its releases and " +
			"its packages. Fix: grant only the scopes the job needs (for example `contents: read`).",
		Key: "write-all",
	}, anchors: []int{line}}, true
}

func stepRules(path string, st *actionlint.Step, trig *trigger, jobSecrets []string) []wfFinding {
	if st == nil || st.Exec == nil {
		return nil
	}
	var out []wfFinding
	switch ex := st.Exec.(type) {
	case *actionlint.ExecAction:
		if ex.Uses == nil {
			return nil
		}
		if trig != nil {
			if f, ok := prtCheckout(path, st, ex, trig); ok {
				out = append(out, f)
			}
		}
		passed := append(inputSecrets(ex.Inputs), envSecrets(st.Env)...)
		passed = append(passed, jobSecrets...)
		if f, ok := unpinned(path, ex.Uses, passed, trig); ok {
			out = append(out, f)
		}
	case *actionlint.ExecRun:
		if trig != nil && ex.Run != nil && reGitCheckoutHead.MatchString(ex.Run.Value) {
			out = append(out, prtFinding(path, ex.Run.Pos.Line, trig, stepLine(st)))
		}
	}
	return out
}

// headRef matches the expressions that name the pull request's own code.
var (
	reHeadRef = regexp.MustCompile(`github\.event\.pull_request\.head\.(sha|ref)|github\.head_ref|github\.event\.pull_request\.merge_commit_sha|` +
		`github\.event\.workflow_run\.head_(sha|branch)|refs/pull/`)
	reGitCheckoutHead = regexp.MustCompile(`(git\s+(fetch|checkout|switch)|gh\s+pr\s+checkout)[^\n]*(\$\{\{[^}]*(` + reHeadRef.String() + `)|refs/pull/|\$\{\{\s*github\.event\.(number|pull_request\.number)\s*\}\})`)
)

// prtCheckout reports actions/checkout of the pull request's head in a privileged workflow.
func prtCheckout(path string, st *actionlint.Step, ex *actionlint.ExecAction, trig *trigger) (wfFinding, bool) {
	if !strings.HasPrefix(strings.ToLower(ex.Uses.Value), "actions/checkout@") {
		return wfFinding{}, false
	}
	for name, in := range ex.Inputs {
		if in == nil || in.Value == nil || (name != "ref" && name != "repository") {
			continue
		}
		if reHeadRef.MatchString(in.Value.Value) || strings.Contains(in.Value.Value, "pull_request.head.repo") {
			return prtFinding(path, in.Value.Pos.Line, trig, stepLine(st), ex.Uses.Pos.Line), true
		}
	}
	return wfFinding{}, false
}

func prtFinding(path string, line int, trig *trigger, more ...int) wfFinding {
	return wfFinding{Finding: runtime.Finding{
		Rule: rulePRTCheckout, Severity: runtime.SeverityCritical, Path: path, Line: line,
		Title: trig.name + " checks out the pull request's code",
		Message: "A " + trig.name + " workflow runs with the base repository's secrets and a write token; " +
			"checking out the pull request's head and building or running it hands both to any fork. " +
			"Fix: use the pull_request trigger for anything that runs the contributed code, or never run it here.",
		Key: "prt",
	}, anchors: append([]int{line, trig.line}, more...)}
}

func stepLine(st *actionlint.Step) int {
	if st.Pos == nil {
		return 0
	}
	return st.Pos.Line
}

var reFullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// unpinned reports a third-party action or reusable workflow referenced by a tag or branch,
// which its owner (or whoever takes over the account) can move to other code. GitHub's own
// actions/* and github/* are not reported. When the workflow runs on pull_request_target or
// workflow_run and the step hands it secrets or the token, the finding is high.
func unpinned(path string, uses *actionlint.String, secrets []string, trig *trigger) (wfFinding, bool) {
	v := uses.Value
	if strings.HasPrefix(v, "./") || strings.HasPrefix(v, "docker://") || actionlint.ContainsExpression(v) {
		return wfFinding{}, false
	}
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return wfFinding{}, false // actionlint reports the malformed reference
	}
	name, ref := v[:at], v[at+1:]
	owner := strings.ToLower(name)
	if i := strings.IndexByte(owner, '/'); i >= 0 {
		owner = owner[:i]
	}
	if owner == "actions" || owner == "github" || reFullSHA.MatchString(ref) {
		return wfFinding{}, false
	}
	line := uses.Pos.Line
	if trig != nil && len(secrets) > 0 {
		return wfFinding{Finding: runtime.Finding{
			Rule: ruleSecretToTag, Severity: runtime.SeverityHigh, Path: path, Line: line,
			Title: trig.name + " hands secrets to an action pinned only by " + refKind(ref),
			Message: "`" + v + "` gets " + strings.Join(secrets, ", ") + " in a " + trig.name + " workflow, which " +
				"runs on events any fork can cause, with the base repository's privileges. Whoever can move " +
				"the `" + ref + "` " + refKind(ref) + " of " + name + " gets them. Fix: pin the action to a full " +
				"commit SHA (keep the version in a comment) and grant the token only the scopes it needs.",
			Key: name,
		}, anchors: []int{line, trig.line}}, true
	}
	return wfFinding{Finding: runtime.Finding{
		Rule: ruleUnpinned, Severity: runtime.SeverityMedium, Path: path, Line: line,
		Title: "Third-party action not pinned to a commit SHA",
		Message: "`" + v + "` follows the `" + ref + "` " + refKind(ref) + ", which its owner can move to " +
			"other code at any time. Fix: pin it to a full commit SHA and keep the version in a comment.",
		Key: name,
	}, anchors: []int{line}}, true
}

func refKind(ref string) string {
	if len(ref) > 0 && (ref[0] == 'v' || ref[0] >= '0' && ref[0] <= '9') {
		return "tag"
	}
	return "branch or tag"
}

var reSecretExpr = regexp.MustCompile(`\$\{\{[^}]*\b(secrets\.[A-Za-z0-9_-]+|github\.token)\b[^}]*\}\}`)

// inputSecrets lists the secrets and tokens a step passes in with:.
func inputSecrets(in map[string]*actionlint.Input) []string {
	var out []string
	for _, i := range in {
		if i != nil && i.Value != nil {
			out = append(out, secretRefs(i.Value.Value)...)
		}
	}
	sort.Strings(out)
	return out
}

func envSecrets(env *actionlint.Env) []string {
	if env == nil {
		return nil
	}
	var out []string
	for _, v := range env.Vars {
		if v != nil && v.Value != nil {
			out = append(out, secretRefs(v.Value.Value)...)
		}
	}
	sort.Strings(out)
	return out
}

func secretRefs(s string) []string {
	var out []string
	for _, m := range reSecretExpr.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
