package publish

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/review"
)

// Bounds of the gate check's progress updates while a review runs. Each update is a check-run
// write that also takes the installation's content-write slot (ContentSpacing), so progress
// never pushes an installation's writes past GitHub's pacing, and it is never needed: the
// conclusion replaces it.
const (
	// DefaultProgressInterval is the least time between two writes of a review's gate check:
	// Begin's and the first update, or two updates.
	DefaultProgressInterval = 15 * time.Second
	// DefaultMaxProgressWrites bounds the updates of one review.
	DefaultMaxProgressWrites = 8
	// progressWriteTimeout bounds one update, retries included: the review's publication
	// waits for an update under way.
	progressWriteTimeout = 10 * time.Second
)

var _ publication.ProgressTracking = (*Publisher)(nil)

// policyLenses are the names of the lenses a trusted configuration runs, in policy order (nil
// without a usable configuration).
func policyLenses(rc *config.Repo, problems config.Problems) []string {
	if rc == nil || len(problems) > 0 {
		return nil
	}
	names := make([]string, 0, len(rc.Policy.Lenses))
	for _, l := range rc.Policy.Lenses {
		names = append(names, l.Name)
	}
	return names
}

// reviewingOutput is the gate check of a review under way: what Begin writes (pg nil) and each
// progress update. It says only what the review has done: which lenses it runs and which have
// finished; outcomes come with the conclusion.
func reviewingOutput(head string, lenses []string, pg *review.Progress) *github.CheckRunOutput {
	if pg != nil {
		lenses = pg.Lenses
	}
	if len(lenses) == 0 {
		return &github.CheckRunOutput{
			Title:   github.String("lensgate: review in progress"),
			Summary: github.String("lensgate is reviewing head `" + head + "`."),
		}
	}
	title := fmt.Sprintf("lensgate: reviewing %s", plural(len(lenses), "lens", "lenses"))
	var b strings.Builder
	fmt.Fprintf(&b, "lensgate is reviewing head `%s` with %s: %s.\n\n", head, plural(len(lenses), "lens", "lenses"), lensList(lenses))
	if pg != nil {
		title += fmt.Sprintf(", %d finished", len(pg.Finished))
		fmt.Fprintf(&b, "Finished: %d of %d", len(pg.Finished), len(lenses))
		if len(pg.Finished) > 0 {
			b.WriteString(" (" + lensList(pg.Finished) + ")")
		}
		fmt.Fprintf(&b, ". Requests to the runtimes over: %d of %d.\n\n", pg.RequestsOver, pg.Requests)
	}
	b.WriteString("Outcomes are decided when every lens has finished; this check concludes with the gate then.")
	return &github.CheckRunOutput{Title: github.String(truncate(title, 255)), Summary: github.String(truncate(b.String(), maxCheckText))}
}

// lensList names lenses in code spans.
func lensList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + strings.ReplaceAll(oneLine(n, 64), "`", "'") + "`"
	}
	return strings.Join(quoted, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// TrackProgress implements publication.ProgressTracking: the gate check Begin opened for the
// head shows which lenses have finished, at most once per ProgressInterval and at most
// MaxProgressWrites times per review. Nil when progress updates are off.
func (p *Publisher) TrackProgress(ctx context.Context, gh *github.Client, pub *publication.Publication) publication.ProgressTracker {
	if p.progressInterval < 0 || pub == nil || pub.Subject == nil || pub.Subject.Kind == review.KindIssue || pub.Subject.HeadSHA == "" {
		return nil
	}
	t := &progressTracker{p: p, gh: gh, pub: pub, jobCtx: ctx, last: p.now(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go t.loop()
	return t
}

// progressTracker writes the progress of one review to its gate check from one goroutine,
// the latest report only: reports that arrive faster than it may write replace each other.
type progressTracker struct {
	p      *Publisher
	gh     *github.Client
	pub    *publication.Publication
	jobCtx context.Context
	last   time.Time // the last write of the gate check (Begin's, then each update)

	mu     sync.Mutex
	latest *review.Progress

	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Report implements publication.ProgressTracker.
func (t *progressTracker) Report(pg review.Progress) {
	t.mu.Lock()
	t.latest = &pg
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Stop implements publication.ProgressTracker.
func (t *progressTracker) Stop() {
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.done
}

func (t *progressTracker) loop() {
	defer close(t.done)
	// Waits end with Stop; a write under way does not (see progressWriteTimeout).
	waitCtx, cancel := context.WithCancel(t.jobCtx)
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-waitCtx.Done():
		}
	}()
	var written string
	for n := 0; n < t.p.maxProgressWrites; {
		select {
		case <-waitCtx.Done():
			return
		case <-t.wake:
		}
		if d := t.p.progressInterval - t.p.now().Sub(t.last); d > 0 {
			if err := t.p.pace.sleep(waitCtx, d); err != nil {
				return
			}
		}
		t.mu.Lock()
		pg := t.latest
		t.mu.Unlock()
		if pg == nil || len(pg.Finished) == len(pg.Lenses) {
			continue // the conclusion follows at once
		}
		out := reviewingOutput(t.pub.Subject.HeadSHA, nil, pg)
		if out.GetSummary() == written {
			continue
		}
		wrote, ok := t.write(waitCtx, n+1, out)
		if !ok {
			return
		}
		if wrote {
			n++
			written, t.last = out.GetSummary(), t.p.now()
		}
	}
}

// write updates the gate check Begin opened with out, within the installation's content-write
// pacing. It reports whether it wrote, and false for ok when the tracking should end: the
// check is not one this job holds in progress, or the review ended while the write waited.
func (t *progressTracker) write(waitCtx context.Context, seq int, out *github.CheckRunOutput) (wrote, ok bool) {
	r := t.p.newRun(t.jobCtx, t.gh, t.pub, fmt.Sprintf("progress-%d", seq))
	cr := t.p.peekCheck(r.checkKey(t.p.checkName))
	if cr == nil || cr.GetStatus() != "in_progress" {
		return false, false
	}
	release, err := t.p.contentSlot(waitCtx, r.info.installation)
	if err != nil {
		return false, false
	}
	defer release()
	ctx, cancel := context.WithTimeout(t.jobCtx, progressWriteTimeout)
	defer cancel()
	if err := r.putCheck(ctx, cr, t.p.checkName, nil, "in_progress", "", out); err != nil {
		zerolog.Ctx(t.jobCtx).Info().Err(err).Msg("gate check progress not written")
		return false, true
	}
	return len(r.notes) == 0, true
}

// contentSlot waits for the installation's next content-write slot, as run.content does, and
// returns what frees it once the write is answered.
func (p *Publisher) contentSlot(ctx context.Context, installation int64) (func(), error) {
	if p.slots != nil && p.pace.spacing > 0 {
		return p.takeSlot(ctx, installation)
	}
	return func() {}, p.pace.wait(ctx, installation)
}

// peekCheck returns a remembered check run without forgetting it.
func (p *Publisher) peekCheck(key string) *github.CheckRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checks[key]
}
