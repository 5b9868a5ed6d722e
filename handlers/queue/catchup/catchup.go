// Package catchup asks GitHub to redeliver the App's webhook deliveries that failed, for example
// while every replica was down: GitHub does not retry failed deliveries on its own.
//
// It is bounded (a time window, a page limit, a redelivery limit per run and per delivery) and
// idempotent: a delivery that any attempt delivered with a 2xx is left alone, a delivery already
// redelivered by this Redeliverer is not asked for again, and a redelivery that still arrives
// twice carries the same X-GitHub-Delivery id, which the job queue ignores (queue.ErrDuplicate).
package catchup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"
)

// Options bound one catch-up run. Zero values take the defaults.
type Options struct {
	// Window is how far back to look (default 24h; GitHub keeps deliveries for 3 days).
	Window time.Duration
	// MaxPages bounds the listing (default 10 pages of 100 deliveries).
	MaxPages int
	// MaxRedeliveries bounds the redeliveries asked for in one run (default 100).
	MaxRedeliveries int
	// MaxAttempts skips a delivery that already failed this many times in the window, counting
	// the original and earlier redeliveries (default 4), so that a payload the App rejects every
	// time is not redelivered forever.
	MaxAttempts int
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logger receives one line per redelivery and a summary (default: none).
	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 24 * time.Hour
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 10
	}
	if o.MaxRedeliveries <= 0 {
		o.MaxRedeliveries = 100
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		nop := zerolog.Nop()
		o.Logger = &nop
	}
	return o
}

// Result tells what a run did.
type Result struct {
	Scanned     int      // deliveries listed inside the window
	Failed      int      // distinct deliveries (GUIDs) with no successful attempt
	Redelivered []string // GUIDs redelivered in this run, newest first
	Skipped     int      // failed GUIDs left alone: already asked for, too many attempts, or over the run limit
}

// Redeliverer remembers what it asked GitHub to redeliver, so repeated runs in one process (on
// start, then on demand) never ask twice for the same delivery.
type Redeliverer struct {
	opts      Options
	mu        sync.Mutex
	requested map[string]time.Time
}

// New returns a Redeliverer with opts.
func New(opts Options) *Redeliverer {
	return &Redeliverer{opts: opts.withDefaults(), requested: map[string]time.Time{}}
}

// Redeliver runs one catch-up with a fresh Redeliverer.
func Redeliver(ctx context.Context, app *github.Client, opts Options) (Result, error) {
	return New(opts).Run(ctx, app)
}

// delivery is what the run knows about one GUID.
type delivery struct {
	guid      string
	newestID  int64 // the newest attempt, the one to redeliver
	event     string
	attempts  int
	succeeded bool
}

// Run lists the App's recent deliveries with app (an App-authenticated client, JWT) and asks
// GitHub to redeliver every one that never succeeded.
func (r *Redeliverer) Run(ctx context.Context, app *github.Client) (Result, error) {
	var res Result
	if app == nil {
		return res, errors.New("catchup: nil GitHub client")
	}
	now := r.opts.Now()
	since := now.Add(-r.opts.Window)
	byGUID := map[string]*delivery{}
	var order []*delivery // newest first, as GitHub lists them
	cursor := ""
listing:
	for page := 0; page < r.opts.MaxPages; page++ {
		ds, resp, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 100, Cursor: cursor})
		if err != nil {
			return res, fmt.Errorf("catchup: list webhook deliveries: %w", err)
		}
		for _, d := range ds {
			if d.DeliveredAt != nil && d.DeliveredAt.Before(since) {
				break listing
			}
			res.Scanned++
			guid := d.GetGUID()
			if guid == "" {
				continue
			}
			e := byGUID[guid]
			if e == nil {
				e = &delivery{guid: guid, newestID: d.GetID(), event: d.GetEvent()}
				byGUID[guid] = e
				order = append(order, e)
			}
			e.attempts++
			if code := d.GetStatusCode(); code >= 200 && code < 300 {
				e.succeeded = true
			}
		}
		if resp == nil || resp.Cursor == "" {
			break
		}
		cursor = resp.Cursor
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for key, at := range r.requested {
		if at.Before(since) {
			delete(r.requested, key) // outside the window GitHub no longer lists it either
		}
	}
	log := r.opts.Logger.With().Str("component", "catchup").Logger()
	for _, e := range order {
		if e.succeeded {
			continue
		}
		res.Failed++
		if _, done := r.requested[e.guid]; done || e.attempts >= r.opts.MaxAttempts || len(res.Redelivered) >= r.opts.MaxRedeliveries {
			res.Skipped++
			continue
		}
		_, _, err := app.Apps.RedeliverHookDelivery(ctx, e.newestID)
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) {
			return res, fmt.Errorf("catchup: redeliver %s: %w", e.guid, err)
		}
		r.requested[e.guid] = now
		res.Redelivered = append(res.Redelivered, e.guid)
		log.Info().Str("delivery_id", e.guid).Str("event", e.event).Int("attempts", e.attempts).Msg("webhook delivery redelivered")
	}
	log.Info().Int("scanned", res.Scanned).Int("failed", res.Failed).Int("redelivered", len(res.Redelivered)).
		Int("skipped", res.Skipped).Msg("webhook catch-up done")
	return res, nil
}
