package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/dryrun"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// serveCmd runs the GitHub App.
type serveCmd struct {
	Config string `help:"Server configuration file (YAML). Every key can also be set from the environment; without a file the environment alone is used." type:"path" env:"LENSGATE_CONFIG"`
	Role   string `help:"all: take webhooks and run reviews; web: only take webhooks; worker: only run reviews (web and worker need a durable queue)." enum:"all,web,worker" default:"all" env:"LENSGATE_ROLE"`
	Check  bool   `help:"Load and validate the configuration, call GET /app, and exit."`
}

func (c *serveCmd) Run(e *env) error {
	cfg, err := config.LoadServer(c.Config, nil)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Role != handlers.RoleAll && cfg.MemoryQueue() && !c.Check {
		return exitWith(exitUsage, fmt.Errorf("serve: --role %s needs a durable queue, not %s (%s)", c.Role, config.MemoryQueueDSN, config.ServerKeyName("queue.dsn")))
	}
	log := newServerLogger(e.stderr, cfg)
	if c.Check {
		// A check has no side effects: no state directory, no audit ledger, no queue database,
		// no migrations.
		checkCfg := *cfg
		checkCfg.DryRun, checkCfg.Queue.DSN = true, config.MemoryQueueDSN
		cfg = &checkCfg
	}
	app, closeAll, err := buildApp(e.ctx, cfg, c.Role, log)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer closeAll()
	if c.Check {
		id, err := app.CheckApp(e.ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "App %d (%s)\n", id.ID, id.Slug)
		fmt.Fprintln(e.stdout, "configuration ok; GitHub App reachable")
		return nil
	}
	return serve(e.ctx, cfg, app, log)
}

// serve listens at once, starts the App once GitHub confirms its identity (retrying until it
// does), serves until ctx ends, then shuts down gracefully: stop taking requests, let running
// reviews finish (or hand them back) within the shutdown timeout.
func serve(ctx context.Context, cfg *config.Server, app *handlers.Server, log zerolog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	runCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	st := newStartup(app.Handler())
	srv := &http.Server{
		Handler:           st,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	var fresh newConns
	fresh.watch(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info().Str("listen", ln.Addr().String()).Msg("listening")
	startCtx, stopStarting := context.WithCancel(ctx)
	defer stopStarting()
	started, startDone := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(startDone)
		started <- startWhenConfirmed(startCtx, runCtx, app, st, log)
	}()
	if err := waitForStop(ctx, errc, started); err != nil {
		_ = srv.Close()
		return err
	}
	log.Info().Dur("timeout", cfg.ShutdownTimeout).Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	httpErr := srv.Shutdown(sctx)
	// A start under way finishes (or gives up with ctx) before the workers are stopped.
	select {
	case <-startDone:
	case <-sctx.Done():
	}
	qErr := app.Shutdown(sctx)
	stopWorkers()
	if err := errors.Join(httpErr, qErr); err != nil {
		log.Warn().Err(err).Msg("shutdown incomplete")
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// waitForStop returns nil when ctx ends, or the error that ends serving first: the listener's,
// or a start that failed after GitHub confirmed the App.
func waitForStop(ctx context.Context, errc, started <-chan error) error {
	for {
		select {
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case err := <-started:
			if err != nil && ctx.Err() == nil {
				return err
			}
			started = nil // started: wait for ctx or the listener
		case <-ctx.Done():
			return nil
		}
	}
}

// buildApp assembles runtimes, pipeline, publisher and queue from the configuration.
func buildApp(ctx context.Context, cfg *config.Server, role string, log zerolog.Logger) (*handlers.Server, func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*handlers.Server, func(), error) { closeAll(); return nil, nil, err }

	dl, err := delegateRuntime(cfg.Runtime)
	if err != nil {
		return fail(err)
	}
	// With a runner, the runtimes are the runner's (read from it below), not this process's.
	reg := runtime.NewRegistry()
	if cfg.Runner.URL == "" || role == handlers.RoleWeb {
		if reg, err = runtimeRegistry(cfg.Runtime, log, dl); err != nil {
			return fail(err)
		}
		if err := addDelegatePresets(reg, dl, cfg.Runtime.Presets); err != nil {
			return fail(err)
		}
	}
	if err := ensureStateDir(cfg); err != nil {
		return fail(err)
	}
	defaultRepo, err := loadDefaultRepo(cfg)
	if err != nil {
		return fail(err)
	}
	rk, err := loadReceiptKeys(cfg, log)
	if err != nil {
		return fail(err)
	}
	wk, err := loadWitnessKeys(ctx, cfg, role, rk, log)
	if err != nil {
		return fail(err)
	}
	if wk.remote != nil {
		reg = wk.remote
	}
	if err := oneRolePerKey(rk.keys, wk.keys); err != nil {
		return fail(err)
	}

	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	q, err := openQueue(ctx, cfg, role, promReg, log)
	if err != nil {
		return fail(err)
	}
	// failQ is fail for the steps after the queue is open, which stop it too.
	failQ := func(err error) (*handlers.Server, func(), error) {
		if q != nil {
			_ = q.Stop(context.WithoutCancel(ctx))
		}
		return fail(err)
	}
	feedback, err := feedbackStore(q)
	if err != nil {
		return failQ(err)
	}
	var pub publication.Publisher = publication.LogPublisher{}
	if !cfg.DryRun {
		p, closeSink, err := newPublisher(ctx, cfg, q, rk, wk, feedback, log)
		if closeSink != nil {
			closers = append(closers, closeSink)
		}
		if err != nil {
			return failQ(err)
		}
		pub = p
	}

	tokens, err := dailyTokens(ctx, cfg.Runtime.MaxTokensPerInstallationPerDay, q, log)
	if err != nil {
		return failQ(err)
	}
	var absent repoconfig.OrgConfigAbsence
	if q != nil {
		// Every replica skips the read another found missing, and a push to the organisation
		// configuration repository received by any replica reaches every worker.
		a, err := durable.NewOrgConfigAbsence(ctx, q, nil)
		if err != nil {
			return failQ(err)
		}
		absent = a
	}
	pipeline := review.NewPipeline(review.Options{Runtimes: reg, Logger: log, Version: version, Tokens: tokens,
		MaxConcurrentCalls: cfg.Runtime.MaxConcurrentCalls, Feedback: feedback,
		CallLimits: review.NewCallLimits(cfg.Runtime.MaxConcurrentCallsTotal, cfg.Runtime.MaxConcurrentCallsPerInstallation)})
	server, err := handlers.New(handlers.Options{
		OrgConfigAbsence: absent,
		Config:           cfg,
		Logger:           log,
		Reviewer:         pipeline,
		Triager:          pipeline,
		Publisher:        pub,
		Queue:            q,
		DefaultRepo:      defaultRepo,
		SigningKeys:      rk.keys,
		WitnessKeys:      wk.keys,
		Registry:         promReg,
		Version:          version,
		Role:             role,
		Delegation:       worker.Delegation{Runtime: dl},
		Quality:          qualitySource(feedback),
		QueuedAfter:      queuedCheckAfter,
	})
	if err != nil {
		return fail(err)
	}
	return server, closeAll, nil
}

// loadDefaultRepo reads review.default_config_file (nil when none is set).
func loadDefaultRepo(cfg *config.Server) (*config.Repo, error) {
	f := cfg.Review.DefaultConfigFile
	if f == "" {
		return nil, nil
	}
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.ServerKeyName("review.default_config_file"), err)
	}
	repo, err := config.ParseRepo(f, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.ServerKeyName("review.default_config_file"), err)
	}
	return repo, nil
}

// receiptKeys are the receipt signing key and the public keys receipts verify under.
type receiptKeys struct {
	signer *disclosure.Signer // nil: reviews are published without receipts
	keys   []ed25519.PublicKey
}

// loadReceiptKeys reads signing_key_file; the retired keys follow the current one so that
// receipts they signed stay verifiable.
func loadReceiptKeys(cfg *config.Server, log zerolog.Logger) (receiptKeys, error) {
	var rk receiptKeys
	if cfg.SigningKeyFile != "" {
		k, err := disclosure.LoadPrivateKey(cfg.SigningKeyFile)
		if err != nil {
			return rk, fmt.Errorf("%s: %w", config.ServerKeyName("signing_key_file"), err)
		}
		rk.keys = append(rk.keys, k.Public().(ed25519.PublicKey))
		rk.signer = &disclosure.Signer{Key: k}
	} else {
		log.Warn().Msg("no signing_key_file: reviews are published without signed receipts")
	}
	rk.keys = appendNewKeys(rk.keys, cfg.ServerPreviousKeys())
	return rk, nil
}

// appendNewKeys appends the keys of more that keys does not hold yet.
func appendNewKeys[K ~[]byte](keys []ed25519.PublicKey, more []K) []ed25519.PublicKey {
	for _, pk := range more {
		if !slices.ContainsFunc(keys, func(k ed25519.PublicKey) bool { return k.Equal(ed25519.PublicKey(pk)) }) {
			keys = append(keys, ed25519.PublicKey(pk))
		}
	}
	return keys
}

// witnessKeys are the observation signer (this process's, or the runner's) and the public
// keys observations verify under.
type witnessKeys struct {
	signer    *observation.Signer // nil when this process signs no observations
	runnerKey ed25519.PublicKey   // the runner's witness key, when a runner signs them
	remote    *runtime.Registry   // the runner's runtimes, when a runner reviews
	keys      []ed25519.PublicKey
}

// loadWitnessKeys finds who signs runner observations: the runner (whose runtimes then review),
// or this process with witness_key_file. That no witness key is a receipt key is checked once,
// over every key of both roles, by oneRolePerKey.
func loadWitnessKeys(ctx context.Context, cfg *config.Server, role string, rk receiptKeys, log zerolog.Logger) (witnessKeys, error) {
	var wk witnessKeys
	switch {
	case cfg.Runner.URL != "" && role != handlers.RoleWeb:
		// The runtimes run in the runner, which signs the observations: this process never
		// holds the witness key.
		remote, pub, err := connectRunner(ctx, cfg.Runner, log)
		if err != nil {
			return wk, err
		}
		wk.remote, wk.runnerKey = remote, pub
		wk.keys = append(wk.keys, pub)
	case cfg.Runner.URL != "" && cfg.Runner.WitnessPublicKey != "":
		// The web role publishes the runner's key without talking to it.
		b, _ := hex.DecodeString(cfg.Runner.WitnessPublicKey)
		wk.keys = append(wk.keys, ed25519.PublicKey(b))
	case cfg.WitnessKeyFile != "":
		k, err := disclosure.LoadPrivateKey(cfg.WitnessKeyFile)
		if err != nil {
			return wk, fmt.Errorf("%s: %w", config.ServerKeyName("witness_key_file"), err)
		}
		wpub := k.Public().(ed25519.PublicKey)
		wk.keys = append(wk.keys, wpub)
		wk.signer = &observation.Signer{Key: k}
		if rk.signer == nil {
			log.Warn().Msg("witness_key_file without signing_key_file: no receipts, so no observations are published")
		}
	}
	wk.keys = appendNewKeys(wk.keys, cfg.ServerPreviousWitnessKeys())
	return wk, nil
}

// openQueue opens the durable queue (nil for the memory queue, which handlers makes).
func openQueue(ctx context.Context, cfg *config.Server, role string, promReg prometheus.Registerer, log zerolog.Logger) (queue.Queue, error) {
	if cfg.MemoryQueue() {
		return nil, nil
	}
	q, err := durable.Open(ctx, cfg.Queue.DSN, durable.Options{
		InsertOnly:                role == handlers.RoleWeb,
		Workers:                   cfg.Queue.Workers,
		MaxRunningPerInstallation: cfg.Queue.MaxRunningPerInstallation,
		JobTimeout:                cfg.Review.JobTimeout,
		RescueStuckJobsAfter:      cfg.Queue.RescueAfter,
		LeaseTTL:                  cfg.Queue.Lease,
		MaxQueued:                 cfg.Queue.Size,
		FetchCooldown:             fetchCooldown(role),
		FetchPollInterval:         fetchPollInterval(cfg),
		Logger:                    &log,
		Registerer:                promReg,
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// newPublisher opens the audit ledger and makes the publisher. closeSink, when not nil,
// closes the ledger; it is returned even with an error once the ledger is open.
func newPublisher(ctx context.Context, cfg *config.Server, q queue.Queue, rk receiptKeys, wk witnessKeys, feedback review.FeedbackStore,
	log zerolog.Logger) (p *publish.Publisher, closeSink func(), err error) {
	sink, err := pdp.OpenFileSink(cfg.AuditFile)
	if err != nil {
		return nil, nil, err
	}
	if aside := sink.SetAside(); aside != "" {
		log.Warn().Str("audit_file", cfg.AuditFile).Str("set_aside", aside).
			Msg("the audit ledger ended in a torn line (a crash while writing); it is kept in set_aside and the chain continues from the last whole record")
	}
	closeSink = func() { _ = sink.Close() }
	spacing := cfg.GitHub.ContentSpacing
	if spacing == 0 {
		spacing = -1 // the operator turned spacing off; publish reads zero as its default
	}
	checks, err := gateCheckRecords(ctx, q)
	if err != nil {
		return nil, closeSink, err
	}
	po := publish.Options{Signer: rk.signer, Witness: wk.signer, Runner: wk.runnerKey, RunnerVersion: version, Audit: sink, DetailsURL: cfg.PublicURL,
		GraphQLURL: cfg.GitHub.V4APIURL, ContentSpacing: spacing, Checks: checks, Feedback: feedback}
	if q != nil && spacing > 0 {
		// Every replica on the queue's database takes the same write slots.
		if po.WriteSlots, err = durable.NewWriteSlots(ctx, q); err != nil {
			return nil, closeSink, err
		}
	}
	if p, err = publish.New(po); err != nil {
		return nil, closeSink, err
	}
	return p, closeSink, nil
}

// gateCheckRecords keeps the gate check run of each head in the durable queue's database, for
// every replica; with the memory queue (nil) the publisher keeps them in this process.
func gateCheckRecords(ctx context.Context, q queue.Queue) (queue.CheckRecords, error) {
	if q == nil {
		return nil, nil
	}
	r, err := durable.NewCheckRecords(ctx, q, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// dailyTokens is the count behind runtimes.max_tokens_per_installation_per_day (nil when it is
// off): in the durable queue's database, shared by every replica and kept across restarts, or
// in this process's memory with the memory queue.
func dailyTokens(ctx context.Context, limit int, q queue.Queue, log zerolog.Logger) (review.DailyTokens, error) {
	if limit <= 0 {
		return nil, nil
	}
	if q == nil {
		log.Info().Int("max_tokens_per_installation_per_day", limit).
			Msg("daily token cap counted in memory: by this process alone, from its start")
		return review.NewTokenLedger(limit, nil), nil
	}
	l, err := durable.NewTokenLedger(ctx, q, limit, nil)
	if err != nil {
		return nil, err
	}
	log.Info().Int("max_tokens_per_installation_per_day", limit).
		Msg("daily token cap counted in the queue database, for every replica")
	return l, nil
}

// runtimeRegistry enables the runtimes the operator listed, after the extra ones (delegate). builtin and dryrun need nothing;
// openai needs an endpoint and a token; exec adapters come from the adapter directory only.
func runtimeRegistry(rc config.ServerRuntime, log zerolog.Logger, extra ...runtime.Runtime) (*runtime.Registry, error) {
	rts := append([]runtime.Runtime{}, extra...)
	for _, name := range rc.Enabled {
		switch name {
		case "builtin":
			rts = append(rts, builtin.New(builtin.Options{}))
		case "dryrun":
			rts = append(rts, dryrun.Runtime{})
		case "openai":
			rt, err := openai.New(openai.Options{BaseURL: rc.OpenAIBaseURL, Token: rc.OpenAIToken, Model: rc.OpenAIModel, Logger: log,
				Timeout: rc.OpenAITimeout, Temperature: rc.OpenAITemperature, Seed: rc.OpenAISeed, LearnContext: true})
			if err != nil {
				return nil, fmt.Errorf("runtimes: %w", err)
			}
			rts = append(rts, rt)
		case "exec":
			if rc.AdapterDir == "" {
				return nil, errors.New("runtimes: exec needs runtimes.adapter_dir (LENSGATE_ADAPTER_DIR)")
			}
			adapters, err := rtexec.Discover(rc.AdapterDir, rtexec.Options{ModelURL: rc.OpenAIBaseURL, Token: rc.OpenAIToken, Model: rc.OpenAIModel})
			if err != nil {
				return nil, fmt.Errorf("runtimes: %w", err)
			}
			for _, a := range adapters {
				rts = append(rts, a)
			}
		default:
			return nil, fmt.Errorf("runtimes: unknown runtime %q (want builtin, dryrun, openai or exec)", name)
		}
	}
	reg := runtime.NewRegistry(rts...)
	names := make([]string, 0, len(rc.Presets))
	for name := range rc.Presets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		key := config.ServerKeyName("runtimes.presets")
		if !config.ValidName(name) {
			return nil, fmt.Errorf("%s: preset %q: want a lower-case label such as security or house-style", key, name)
		}
		if err := reg.AddPreset(name, rc.Presets[name]); err != nil {
			return nil, fmt.Errorf("%s: %w (enabled: %s)", key, err, strings.Join(reg.Names(), ", "))
		}
	}
	return reg, nil
}

// ensureStateDir creates the state directory when the SQLite queue or the audit ledger lives in
// it, so a fresh machine needs no preparation; other paths are the operator's to provide.
func ensureStateDir(cfg *config.Server) error {
	inState := func(p string) bool {
		return p != "" && strings.HasPrefix(filepath.Clean(p), filepath.Clean(cfg.StateDir)+string(filepath.Separator))
	}
	if cfg.StateDir == "" || (!inState(cfg.SQLitePath()) && (cfg.DryRun || !inState(cfg.AuditFile))) {
		return nil
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", config.ServerKeyName("state_dir"), err)
	}
	return nil
}

func newServerLogger(w io.Writer, cfg *config.Server) zerolog.Logger {
	return newLogger(w, cfg.LogLevel, cfg.LogFormat)
}

func newLogger(w io.Writer, level, format string) zerolog.Logger {
	if w == nil {
		w = os.Stderr
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("service", "lensgate").Logger()
}

// fetchCooldown is how soon a free worker of this process fetches its next job. Where the same
// process answers webhooks (role all, the SQLite default) its workers fetch at River's pace: a
// worker that takes the next job the moment it is free competes with the webhook handlers for
// the CPU and the database, which tripled the webhook acknowledgement's median on two cores.
// Worker replicas take the queue's default, a fetch as soon as a worker is free.
func fetchCooldown(role string) time.Duration {
	if role == handlers.RoleAll {
		return durable.SharedFetchCooldown
	}
	return 0
}

// queuedCheckAfter is how long a pull request's job waits for a worker before its head's gate
// check shows it queued: a job taken sooner goes straight to in progress, with no extra write.
const queuedCheckAfter = 3 * time.Second

// sqliteFetchPoll is how often the workers of an SQLite queue look for new jobs. SQLite sends no
// notifications, and River's default poll of a second put up to a second between a webhook and
// the moment a worker takes its job and the gate check shows the review in progress. A poll is
// one indexed query on the local file, at most as often as role all's workers fetch anyway
// (durable.SharedFetchCooldown).
const sqliteFetchPoll = durable.SharedFetchCooldown

// fetchPollInterval is the queue's poll interval: sqliteFetchPoll on SQLite, River's default
// where notifications wake the workers (PostgreSQL).
func fetchPollInterval(cfg *config.Server) time.Duration {
	if cfg.SQLitePath() != "" {
		return sqliteFetchPoll
	}
	return 0
}

// oneRolePerKey refuses a key that is both a receipt key (signing_key_file or
// previous_public_keys) and a witness key (witness_key_file, the runner's, or
// previous_witness_public_keys): a retired receipt key could otherwise vouch for an
// observation, which would be one more self-declaration.
func oneRolePerKey(receipt, witness []ed25519.PublicKey) error {
	for _, w := range witness {
		if slices.ContainsFunc(receipt, func(r ed25519.PublicKey) bool { return r.Equal(w) }) {
			return fmt.Errorf("key %s is both a receipt key (%s or %s) and a witness key (%s, %s, %s or %s): give each role keys of its own",
				hex.EncodeToString(w), config.ServerKeyName("signing_key_file"), config.ServerKeyName("previous_public_keys"),
				config.ServerKeyName("witness_key_file"), config.ServerKeyName("runner.url"), config.ServerKeyName("runner.witness_public_key"),
				config.ServerKeyName("previous_witness_public_keys"))
		}
	}
	return nil
}
