package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers"
)

// Until GitHub confirms the App's identity (GET /app), the server cannot review: it does not
// know its own login, and a wrong id or key would make every write fail. GitHub may also be
// unreachable when the process starts (a network or proxy not up yet), so serve listens at
// once and confirms the identity in the background, retrying with backoff: the orchestrator
// sees a live process (/healthz) that is not ready (/readyz 503 with the reason), instead of a
// crash loop.

// Backoff bounds of the identity check.
const (
	startRetryFirst = time.Second
	startRetryMax   = time.Minute
)

// startup answers HTTP while the server is starting: the liveness probe and metrics as usual,
// the readiness probe with the reason it is not ready, everything else (webhooks included) 503
// with Retry-After. GitHub keeps a refused delivery as failed; catch-up redelivers it once the
// server has started (queue.catchup_window).
type startup struct {
	app     http.Handler
	started atomic.Bool
	reason  atomic.Pointer[string]
}

func newStartup(app http.Handler) *startup {
	s := &startup{app: app}
	s.setReason("confirming the GitHub App's identity with GitHub (GET /app)")
	return s
}

func (s *startup) setReason(r string) { s.reason.Store(&r) }

func (s *startup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.started.Load() {
		s.app.ServeHTTP(w, r)
		return
	}
	switch r.URL.Path {
	case handlers.RouteHealth, handlers.RouteMetrics:
		s.app.ServeHTTP(w, r)
		return
	case handlers.RouteReady:
	default:
		w.Header().Set("Retry-After", "5")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "not ready", "reason": *s.reason.Load()})
}

// startWhenConfirmed confirms the App's identity, retrying with backoff until it succeeds or
// ctx ends, then starts the workers (on runCtx) and lets every route through. The reason
// served on /readyz says what failed without GitHub's answer, which the log holds.
func startWhenConfirmed(ctx, runCtx context.Context, app *handlers.Server, st *startup, log zerolog.Logger) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = startRetryFirst, startRetryMax
	for attempt := 1; ; attempt++ {
		_, err := app.CheckApp(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := b.NextBackOff()
		log.Error().Err(err).Int("attempt", attempt).Dur("retry_in", wait).Msg("GitHub App not confirmed; not ready, retrying")
		st.setReason(fmt.Sprintf("the GitHub App's identity is not confirmed: GET /app failed %d time(s), next try in %s (the log has GitHub's answer)",
			attempt, wait.Round(100*time.Millisecond)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	if err := app.Start(runCtx); err != nil {
		return err
	}
	st.started.Store(true)
	return nil
}
