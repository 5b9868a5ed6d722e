package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/review"
)

// feedbackStore keeps the repositories' feedback and quality events: in the durable queue's
// database, shared by every replica, or in this process's memory with the memory queue.
func feedbackStore(q queue.Queue) (review.FeedbackStore, error) {
	if q == nil {
		return review.NewMemoryFeedback(nil), nil
	}
	s, err := durable.NewFeedbackStore(q, nil)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// qualitySource reads the quality figures of a store for the details page and /metrics.
func qualitySource(store review.FeedbackStore) details.QualitySource {
	if store == nil {
		return nil
	}
	return func(ctx context.Context, repo string, since time.Time) ([]details.QualityRow, error) {
		counts, err := store.Quality(ctx, repo, since)
		if err != nil {
			return nil, err
		}
		out := make([]details.QualityRow, 0, len(counts))
		for _, c := range counts {
			n := c.Counts
			out = append(out, details.QualityRow{Repo: c.Repo, Lens: c.Lens,
				Posted: n[review.QualityPosted], Fixed: n[review.QualityFixed], Dismissed: n[review.QualityDismissed],
				ThumbsUp: n[review.QualityThumbsUp], ThumbsDown: n[review.QualityThumbsDown], Resolved: n[review.QualityResolved],
				Withdrawn: n[review.QualityWithdrawn], Suppressed: n[review.QualitySuppressed]})
		}
		return out, nil
	}
}

// storeFlags name the database of the server's durable queue, which holds the feedback.
type storeFlags struct {
	QueueDSN string `help:"The server's durable queue database (its queue.dsn): sqlite:///PATH or postgres://…" env:"LENSGATE_QUEUE_DSN" required:""`
}

// open opens the feedback store of the server's durable queue without running any job. The
// memory queue keeps it in the server process only, out of a command's reach.
func (f storeFlags) open(ctx context.Context) (review.FeedbackStore, func(), error) {
	if f.QueueDSN == "" || f.QueueDSN == config.MemoryQueueDSN {
		return nil, nil, exitWith(exitUsage, errors.New("feedback and quality figures are kept in the durable queue's database; with the memory queue they live in the server process only: read them on /metrics and the details page"))
	}
	q, err := durable.Open(ctx, f.QueueDSN, durable.Options{InsertOnly: true})
	if err != nil {
		return nil, nil, exitWith(exitUsage, fmt.Errorf("open the queue database: %w", err))
	}
	stop := func() { _ = q.Stop(context.WithoutCancel(ctx)) }
	s, err := durable.NewFeedbackStore(q, nil)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return s, stop, nil
}

var reRepo = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`)

func checkRepo(repo string) error {
	if !reRepo.MatchString(repo) {
		return exitWith(exitUsage, fmt.Errorf("--repo %q: want owner/name", repo))
	}
	return nil
}

type feedbackCmd struct {
	List  feedbackListCmd  `cmd:"" help:"List a repository's feedback that suppresses findings, newest first."`
	Clear feedbackClearCmd `cmd:"" help:"Forget a repository's feedback: findings like the ones people rejected are published again."`
}

type feedbackListCmd struct {
	storeFlags
	Repo  string `required:"" help:"The repository, owner/name."`
	Limit int    `default:"100" help:"Most entries to list (at most the 500 a repository keeps)."`
	JSON  bool   `help:"Print JSON instead of a table."`
}

func (c *feedbackListCmd) Run(e *env) error {
	if err := checkRepo(c.Repo); err != nil {
		return err
	}
	if c.Limit < 1 || c.Limit > review.MaxFeedbackPerRepo {
		return exitWith(exitUsage, fmt.Errorf("--limit %d: want 1 to %d", c.Limit, review.MaxFeedbackPerRepo))
	}
	store, stop, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer stop()
	fbs, err := store.ListFeedback(e.ctx, c.Repo, c.Limit)
	if err != nil {
		return err
	}
	if c.JSON {
		if fbs == nil {
			fbs = []review.Feedback{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(fbs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tPR\tKIND\tBY\tLENS\tFINDING\tPATH\tTEXT\tREASON")
	for _, fb := range fbs {
		fmt.Fprintf(tw, "%s\t#%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", fb.At.UTC().Format(time.RFC3339), fb.Number, fb.Kind, dash(fb.By), review.PlainText(fb.Lens),
			fb.FindingID, review.PlainText(review.DisplayPath(fb.Path)), cell(fb.Text, 60), cell(fb.Reason, 60))
	}
	return tw.Flush()
}

type feedbackClearCmd struct {
	storeFlags
	Repo string `required:"" help:"The repository, owner/name."`
}

func (c *feedbackClearCmd) Run(e *env) error {
	if err := checkRepo(c.Repo); err != nil {
		return err
	}
	store, stop, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer stop()
	n, err := store.ClearFeedback(e.ctx, c.Repo)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "cleared %d feedback entr%s of %s\n", n, map[bool]string{true: "y", false: "ies"}[n == 1], c.Repo)
	return nil
}

type statsCmd struct {
	storeFlags
	Repo string `help:"The repository, owner/name (every repository when empty)."`
	Days int    `default:"30" help:"The window, in days (1 to 400)."`
	JSON bool   `help:"Print JSON instead of a table."`
}

// statsRow is one line of lensgate stats.
type statsRow struct {
	details.QualityRow
	// Addressed is fixed / posted; null when nothing was posted.
	Addressed *float64 `json:"addressed"`
}

func (c *statsCmd) Run(e *env) error {
	if c.Repo != "" {
		if err := checkRepo(c.Repo); err != nil {
			return err
		}
	}
	if c.Days < 1 || c.Days > details.MaxQualityDays {
		return exitWith(exitUsage, fmt.Errorf("--days %d: want 1 to %d", c.Days, details.MaxQualityDays))
	}
	store, stop, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer stop()
	rows, err := qualitySource(store)(e.ctx, c.Repo, time.Now().Add(-time.Duration(c.Days)*24*time.Hour))
	if err != nil {
		return err
	}
	out := make([]statsRow, 0, len(rows))
	for _, r := range rows {
		sr := statsRow{QualityRow: r}
		if rate, ok := r.AddressedRate(); ok {
			sr.Addressed = &rate
		}
		out = append(out, sr)
	}
	if c.JSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Days int        `json:"days"`
			Rows []statsRow `json:"rows"`
		}{c.Days, out})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "REPOSITORY\tLENS\tPOSTED\tFIXED\tADDRESSED\tDISMISSED\t👍\t👎\tRESOLVED UNFIXED\tWITHDRAWN\tSUPPRESSED\t")
	for _, r := range out {
		addressed := "—"
		if r.Addressed != nil {
			addressed = fmt.Sprintf("%.0f%%", *r.Addressed*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Repo, review.PlainText(r.Lens), r.Posted, r.Fixed, addressed,
			r.Dismissed, r.ThumbsUp, r.ThumbsDown, r.Resolved, r.Withdrawn, r.Suppressed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out) == 0 {
		fmt.Fprintf(e.stdout, "no finding recorded in the last %d days\n", c.Days)
	}
	return nil
}

// printWithdrawn lists, in lensgate review's text report, the findings verification withdrew:
// a local review shows what it did not report and why.
func printWithdrawn(w io.Writer, d *review.Decision) {
	v := d.Verification
	if len(v.Withdrawn) == 0 && v.ModelCause == "" {
		return
	}
	fmt.Fprintf(w, "\nWithdrawn on verification (%d of %d checked, review.verify: %s):\n", len(v.Withdrawn), v.Checked, v.Mode)
	for _, x := range v.Withdrawn {
		f := x.Finding
		loc := review.DisplayPath(f.Path)
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", loc, f.Line)
		}
		fmt.Fprintf(w, "  %-8s %-12s %s  %s  [%s]\n           %s: %s\n", f.Severity, review.PlainText(f.Lens), loc, review.PlainText(f.Title), f.ID,
			x.Check, review.PlainText(x.Reason))
	}
	if v.ModelCause != "" {
		fmt.Fprintf(w, "  the verifying model call was incomplete: %s\n", review.PlainText(v.ModelCause))
	}
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// cell is untrusted text for one table cell: one line, no tabs, bounded.
func cell(s string, n int) string {
	s = strings.ReplaceAll(review.PlainText(s), "\t", " ")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return dash(s)
}
