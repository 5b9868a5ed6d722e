package builtin

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// isWorkflow reports whether path is a GitHub Actions workflow or composite action.
func isWorkflow(path string) bool { return runtime.IsWorkflowPath(path) }

// checkWorkflow reviews a changed workflow. With its whole head file (and a file that agrees
// with the diff), a workflow under .github/workflows is parsed and linted with actionlint and the
// workflow-security rules, and findings on lines the change does not add are dropped. Composite
// actions (action.yml, which actionlint does not lint), files known only from their diff and
// files with a syntax error (whose tree may miss parts of them) get the line patterns of
// scanWorkflow for security.
func checkWorkflow(f *diff.File, head []byte) (security, lint []runtime.Finding) {
	path := f.Path()
	added := map[int][]byte{}
	f.Walk(func(l diff.Line) bool {
		if l.Kind == '+' {
			added[l.New] = l.Text
		}
		return true
	})
	if strings.HasPrefix(strings.ToLower(path), ".github/workflows/") {
		if _, ok := wholeFile(head, added); ok {
			lines := make(map[int]bool, len(added))
			for n := range added {
				lines[n] = true
			}
			sec, lint, parsed := lintWorkflow(path, head, lines)
			if !parsed {
				sec = scanWorkflow(f, head)
			}
			return sec, lint
		}
	}
	return scanWorkflow(f, head), nil
}

var (
	reTarget       = regexp.MustCompile(`(^|[\s\[,{-])pull_request_target\b`)
	reCheckoutHead = regexp.MustCompile(`\$\{\{\s*(github\.event\.pull_request\.head\.(sha|ref)|github\.head_ref|github\.event\.pull_request\.merge_commit_sha)\s*\}\}|refs/pull/`)
	reRunKey       = regexp.MustCompile(`^(\s*)(-\s+)?run\s*:\s*(.*)$`)
	reUntrusted    = regexp.MustCompile(`\$\{\{[^}]*\b(github\.event\.[A-Za-z0-9_.\[\]'*-]+|github\.head_ref)[^}]*\}\}`)
	reWriteAll     = regexp.MustCompile(`^\s*permissions\s*:\s*["']?write-all["']?\s*(#.*)?$`)
)

type visibleLine struct {
	added bool
	no    int
	text  []byte
}

// scanWorkflow looks at the lines a diff shows of a workflow file (added and context lines),
// or, when the whole head file is known, at all of its lines. Only a problem on an added line
// is reported, but its context may come from unchanged lines: a pull_request_target trigger
// far above a changed checkout step is only visible in the whole file.
func scanWorkflow(f *diff.File, head []byte) []runtime.Finding {
	path := f.Path()
	var lines []visibleLine
	added := map[int][]byte{}
	f.Walk(func(l diff.Line) bool {
		if l.Kind == '-' {
			return true
		}
		if l.Kind == '+' && len(added) < 100_000 {
			added[l.New] = l.Text
		}
		if len(lines) < 100_000 {
			lines = append(lines, visibleLine{added: l.Kind == '+', no: l.New, text: l.Text})
		}
		return true
	})
	if whole, ok := wholeFile(head, added); ok {
		lines = whole
	}
	var out []runtime.Finding
	var target, checkout *visibleLine
	runIndent := -1
	for i := range lines {
		l := &lines[i]
		text := l.text
		if k := bytes.IndexByte(text, '#'); k >= 0 && !bytes.Contains(text[:k], []byte("${{")) {
			text = text[:k]
		}
		indent := len(text) - len(bytes.TrimLeft(text, " \t"))
		trimmed := bytes.TrimSpace(text)
		if runIndent >= 0 && len(trimmed) > 0 && indent <= runIndent {
			runIndent = -1
		}
		inRun := runIndent >= 0
		if m := reRunKey.FindSubmatch(text); m != nil {
			inRun = true
			rest := bytes.TrimSpace(m[3])
			if len(rest) > 0 && (rest[0] == '|' || rest[0] == '>') {
				runIndent = len(m[1])
				if len(m[2]) > 0 {
					runIndent += len(m[2])
				}
			} else {
				runIndent = -1
			}
		}
		if inRun && l.added {
			if m := reUntrusted.FindSubmatch(text); m != nil {
				out = append(out, runtime.Finding{
					Rule: ruleUntrustedInput, Severity: runtime.SeverityHigh, Path: path, Line: l.no,
					Title: "Untrusted event data expanded inside run:",
					Message: "`" + string(m[1]) + "` is substituted into the shell script before it runs, so a " +
						"crafted title, branch name or body becomes shell code. Pass it through env: and quote the variable.",
					Key: "inj:" + lineKey(l.text),
				})
			}
		}
		if l.added && reWriteAll.Match(text) {
			out = append(out, runtime.Finding{
				Rule: ruleWriteAll, Severity: runtime.SeverityHigh, Path: path, Line: l.no,
				Title:   "Workflow token granted write-all",
				Message: "`permissions: write-all` gives every job a token that can write to the whole repository. Grant only the scopes a job needs.",
				Key:     "perm:" + lineKey(l.text),
			})
		}
		if target == nil && reTarget.Match(text) {
			target = l
		}
		if checkout == nil && reCheckoutHead.Match(text) {
			checkout = l
		} else if checkout != nil && !checkout.added && l.added && reCheckoutHead.Match(text) {
			checkout = l
		}
	}
	if target != nil && checkout != nil && (target.added || checkout.added) {
		at := checkout
		if !checkout.added {
			at = target
		}
		out = append(out, runtime.Finding{
			Rule: rulePRTCheckout, Severity: runtime.SeverityCritical, Path: path, Line: at.no,
			Title: "pull_request_target checks out the pull request's code",
			Message: "A pull_request_target workflow runs with the base repository's secrets and a write token; " +
				"checking out and running the pull request's head hands both to any fork. Use pull_request, " +
				"or never build or run the checked-out code.",
			Key: "prt",
		})
	}
	return out
}

// wholeFile splits the head file into lines, marking the ones the diff adds. It refuses (ok
// false) a file that does not agree with the diff, so stale contents never hide a finding.
func wholeFile(head []byte, added map[int][]byte) ([]visibleLine, bool) {
	if head == nil || len(head) > runtime.MaxHeadContentBytes {
		return nil, false
	}
	split := bytes.Split(bytes.TrimSuffix(head, []byte("\n")), []byte("\n"))
	for no, want := range added {
		if no < 1 || no > len(split) || !bytes.Equal(bytes.TrimSuffix(want, []byte("\r")), bytes.TrimSuffix(split[no-1], []byte("\r"))) {
			return nil, false
		}
	}
	lines := make([]visibleLine, len(split))
	for i, text := range split {
		_, isAdded := added[i+1]
		lines[i] = visibleLine{added: isAdded, no: i + 1, text: bytes.TrimSuffix(text, []byte("\r"))}
	}
	return lines, true
}
