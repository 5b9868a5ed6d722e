// Package handlers assembles lensgate's GitHub App: the GitHub clients and their response
// cache, the webhook receiver (handlers/webhook), the worker that runs review jobs
// (handlers/worker), the queue, the details page, metrics and the HTTP routes. The jobs
// themselves live in the sub-packages; this package only wires them together.
package handlers

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metrics "github.com/rcrowley/go-metrics"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/catchup"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/handlers/webhook"
	"github.com/lensgate/lensgate/handlers/worker"
)

// Routes served by the App.
const (
	RouteHook    = githubapp.DefaultWebhookRoute // "/api/github/hook"
	RouteHealth  = "/healthz"
	RouteReady   = "/readyz"
	RouteMetrics = "/metrics"
	RouteKeys    = "/.well-known/lensgate/keys"
)

// Options assemble a Server. Config is required; everything else has a default.
type Options struct {
	Config *config.Server
	Logger zerolog.Logger
	// Reviewer and Triager run the pipelines. A nil Reviewer refuses to start.
	Reviewer worker.Reviewer
	Triager  worker.Triager
	// Publisher writes outcomes to GitHub; nil logs them only.
	Publisher publication.Publisher
	// Queue holds review jobs; nil builds the in-memory queue sized by Config.Queue.
	Queue queue.Queue
	// DefaultRepo is the server default configuration (config.DefaultRepo() when nil).
	DefaultRepo *config.Repo
	// SigningKeys are the receipt public keys served at RouteKeys.
	SigningKeys []ed25519.PublicKey
	// WitnessKeys are the observation (runner witness) public keys served at RouteKeys.
	WitnessKeys []ed25519.PublicKey
	// ClientOptions are appended to the GitHub client options (tests pass WithTransport).
	ClientOptions []githubapp.ClientOption
	// Registry receives every metric; nil creates one with the Go and process collectors.
	Registry *prometheus.Registry
	// Backoff overrides the retry delays of GitHub reads (tests shorten them).
	InitialBackoff, MaxBackoff time.Duration
	// MaxUnverifiedBytes bounds the body bytes held by webhook requests whose signature is not
	// checked yet, all together (webhook.DefaultMaxUnverifiedBytes when zero); beyond it they get 503.
	MaxUnverifiedBytes int64
	// Version is reported in the User-Agent and /healthz.
	Version string
	// CheckName is the gate check run's name the details page reads (the publisher's default
	// when empty).
	CheckName string
	// Delegation configures lenses answered by another review bot (its Runtime must be the
	// delegate runtime the Reviewer's pipeline uses).
	Delegation worker.Delegation
	// OrgConfigAbsence keeps which owners have no organisation configuration, for
	// OrgConfigAbsentTTL (this process's memory when nil; durable.OrgConfigAbsence shares it
	// through the durable queue's database, so a push received by one replica reaches all).
	OrgConfigAbsence repoconfig.OrgConfigAbsence
	// Now is the clock of requests, waits and looks (time.Now when nil); tests move it.
	Now func() time.Time
	// Role splits a deployment: RoleAll (default) takes webhooks and runs reviews, RoleWeb only
	// takes webhooks (a durable queue carries the jobs to workers), RoleWorker only runs reviews.
	Role string
	// Quality, when set, reads the review quality figures for /metrics and the repository
	// details page.
	Quality details.QualitySource
	// QueuedAfter is how long a pull request's job waits for a worker before its head's gate
	// check shows it queued (0: never). It applies with RoleAll on the memory or SQLite queue,
	// where this process runs every worker of the queue.
	QueuedAfter time.Duration
}

// Roles of a replica.
const (
	RoleAll    = "all"
	RoleWeb    = "web"
	RoleWorker = "worker"
)

// Server is the assembled App.
type Server struct {
	cfg      *config.Server
	log      zerolog.Logger
	clients  githubapp.ClientCreator
	queue    queue.Queue
	worker   *worker.Worker
	registry *prometheus.Registry
	handler  http.Handler
	keys     []ed25519.PublicKey
	witness  []ed25519.PublicKey
	version  string
	role     string
	// catchupDone is closed when the start-up catch-up finished (nil when it does not run).
	catchupDone chan struct{}
	// app is the App identity read at Start, for the details page.
	app     atomic.Pointer[publication.AppIdentity]
	ready   atomic.Bool
	started atomic.Bool
}

// New assembles the App without contacting GitHub; Start does that.
func New(opts Options) (*Server, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	cfg := opts.Config
	reg, gm := registries(opts)
	cc, err := newClients(cfg, opts, gm)
	if err != nil {
		return nil, err
	}
	var s *Server
	q := newQueue(cfg, opts, reg)
	if qm, ok := opts.Publisher.(publication.QueueMarking); ok && opts.QueuedAfter > 0 && opts.Role == RoleAll &&
		(opts.Queue == nil || cfg.SQLitePath() != "") {
		app := func() publication.AppIdentity {
			if a := s.app.Load(); a != nil {
				return *a
			}
			return publication.AppIdentity{} // before Start: the App's check runs are not told apart
		}
		q = newQueuedMarks(q, qm, cc, opts.QueuedAfter, app, opts.Queue == nil, opts.Logger)
	}
	configs := repoconfig.NewConfigLoader(cfg.Review.OrgConfigRepo, opts.DefaultRepo, opts.OrgConfigAbsence, opts.Now)
	fetch := pull.Fetcher{Attempts: cfg.Review.SnapshotAttempts, InitialBackoff: opts.InitialBackoff, MaxBackoff: opts.MaxBackoff}
	s = &Server{
		cfg:      cfg,
		log:      opts.Logger,
		clients:  cc,
		queue:    q,
		registry: reg,
		keys:     opts.SigningKeys,
		witness:  opts.WitnessKeys,
		version:  opts.Version,
		role:     opts.Role,
		worker: &worker.Worker{
			Clients:    cc,
			Configs:    configs,
			Fetch:      fetch,
			Reviewer:   opts.Reviewer,
			Triager:    opts.Triager,
			Publisher:  opts.Publisher,
			JobTimeout: cfg.Review.JobTimeout,
			Delegates:  opts.Delegation,
			Queue:      q,
			Command:    cfg.Review.Command,
			Now:        opts.Now,
			Logger:     opts.Logger,
			Metrics:    worker.NewMetrics(reg),
		},
	}
	hooks := webhook.New(webhook.Options{
		Queue: q, Clients: cc, Fetch: fetch, Configs: configs, Delegates: opts.Delegation.Runtime,
		AppID: cfg.GitHub.App.IntegrationID, Command: cfg.Review.Command,
		ReviewDrafts: cfg.Review.ReviewDrafts, Backfill: cfg.Review.BackfillOnInstall,
		Secret: cfg.GitHub.App.WebhookSecret, MaxUnverifiedBytes: opts.MaxUnverifiedBytes,
		EventQueueSize: cfg.Queue.EventQueueSize, EventWorkers: cfg.Queue.EventWorkers,
		Registry: reg, GoMetrics: gm, Now: opts.Now, Logger: opts.Logger,
	})
	if s.handler, err = s.routes(hooks, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults checks what New requires and fills in the defaults of the rest.
func withDefaults(opts Options) (Options, error) {
	if opts.Config == nil {
		return opts, errors.New("handlers: no server configuration")
	}
	if err := opts.Config.Validate(); err != nil {
		return opts, err
	}
	if opts.Reviewer == nil {
		return opts, errors.New("handlers: no reviewer")
	}
	if opts.Publisher == nil {
		opts.Publisher = publication.LogPublisher{}
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	switch opts.Role {
	case "":
		opts.Role = RoleAll
	case RoleAll, RoleWeb, RoleWorker:
	default:
		return opts, fmt.Errorf("handlers: unknown role %q (want all, web or worker)", opts.Role)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts, nil
}

// registries returns the Prometheus registry every metric goes to, and the go-metrics registry
// go-githubapp records into, bridged to it at scrape time (one per server).
func registries(opts Options) (*prometheus.Registry, metrics.Registry) {
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	gm := metrics.NewRegistry()
	reg.MustRegister(goMetricsCollector{reg: gm})
	if opts.Quality != nil {
		reg.MustRegister(newQualityCollector(opts.Quality, opts.Now))
	}
	return reg, gm
}

// newClients makes the GitHub client creator: one response cache for every client of this
// server, every stored response revalidated.
func newClients(cfg *config.Server, opts Options, gm metrics.Registry) (githubapp.ClientCreator, error) {
	respCache := newResponseCache(maxCacheBytes)
	ghc := githubapp.Config{WebURL: cfg.GitHub.WebURL, V3APIURL: cfg.GitHub.V3APIURL, V4APIURL: cfg.GitHub.V4APIURL}
	ghc.App.IntegrationID = cfg.GitHub.App.IntegrationID
	ghc.App.WebhookSecret = cfg.GitHub.App.WebhookSecret
	ghc.App.PrivateKey = cfg.GitHub.App.PrivateKey
	copts := append([]githubapp.ClientOption{
		githubapp.WithClientUserAgent("lensgate/" + opts.Version),
		githubapp.WithClientTimeout(cfg.GitHub.Timeout),
		githubapp.WithClientMiddleware(githubapp.ClientMetrics(gm), githubapp.ClientLogging(zerolog.DebugLevel), conditionalRequests(respCache)),
	}, opts.ClientOptions...)
	cc, err := githubapp.NewDefaultCachingClientCreator(ghc, copts...)
	if err != nil {
		return nil, fmt.Errorf("github client creator: %w", err)
	}
	return cc, nil
}

// newQueue is opts.Queue, or the in-memory queue sized by the configuration.
func newQueue(cfg *config.Server, opts Options, reg prometheus.Registerer) queue.Queue {
	if opts.Queue != nil {
		return opts.Queue
	}
	return queue.NewMemory(queue.MemoryOptions{
		Capacity:                  cfg.Queue.Size,
		Workers:                   cfg.Queue.Workers,
		MaxRunningPerInstallation: cfg.Queue.MaxRunningPerInstallation,
		Metrics:                   queue.NewMetrics(reg),
		Logger:                    opts.Logger,
		// Scheduled jobs wait by the same clock that scheduled them.
		Now: opts.Now,
	})
}

// routes serves the webhook and the details page (except on a worker replica), health,
// readiness, metrics and the public keys.
func (s *Server) routes(hooks *webhook.Receiver, opts Options) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+RouteHealth, s.health)
	mux.HandleFunc("GET "+RouteReady, s.readiness)
	mux.Handle("GET "+RouteMetrics, promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+RouteKeys, s.serveKeys)
	if opts.Role == RoleWorker {
		return mux, nil
	}
	mux.Handle(RouteHook, recoverer(hooks, opts.Logger))
	page, err := s.newDetails(hooks, opts)
	if err != nil {
		return nil, fmt.Errorf("details page: %w", err)
	}
	if page != nil {
		for _, route := range page.Routes() {
			mux.Handle(route, recoverer(page, opts.Logger))
		}
	}
	return mux, nil
}

// Handler is the App's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Queue is the job queue the handlers feed.
func (s *Server) Queue() queue.Queue { return s.queue }

// App is lensgate's App identity as GitHub reported it at Start.
func (s *Server) App() publication.AppIdentity { return s.worker.App }

// Start fails fast on a wrong App id or key by calling GET /app, then starts the workers. The
// queue's workers stop when ctx ends or Shutdown is called.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("handlers: already started")
	}
	app, err := s.CheckApp(ctx)
	if err != nil {
		return err
	}
	s.worker.App = app
	s.app.Store(&app)
	if s.role != RoleWeb {
		if err := s.queue.Start(ctx, s.worker.Handle); err != nil {
			return fmt.Errorf("start queue: %w", err)
		}
	}
	if s.role != RoleWorker && s.cfg.Queue.CatchupWindow > 0 {
		s.catchupDone = make(chan struct{})
		go s.catchup(ctx)
	}
	s.ready.Store(true)
	s.log.Info().Int64("app_id", app.ID).Str("app_slug", app.Slug).Str("role", s.role).Msg("GitHub App ready")
	return nil
}

// catchup asks GitHub to redeliver the webhook deliveries that failed while no replica was up
// (GitHub does not retry them). Redelivered events are ordinary deliveries: a duplicate id is
// ignored by the queue.
func (s *Server) catchup(ctx context.Context) {
	defer close(s.catchupDone)
	client, err := s.clients.NewAppClient()
	if err != nil {
		s.log.Warn().Err(err).Msg("catch-up skipped: no App client")
		return
	}
	res, err := catchup.Redeliver(ctx, client, catchup.Options{Window: s.cfg.Queue.CatchupWindow, Logger: &s.log})
	ev := s.log.Info()
	if err != nil {
		ev = s.log.Warn().Err(err)
	}
	ev.Int("scanned", res.Scanned).Int("failed", res.Failed).Int("redelivered", len(res.Redelivered)).
		Int("skipped", res.Skipped).Dur("window", s.cfg.Queue.CatchupWindow).Msg("webhook catch-up")
}

// CatchupDone is closed once the start-up catch-up has finished; nil when it is off.
func (s *Server) CatchupDone() <-chan struct{} { return s.catchupDone }

// CheckApp authenticates as the App and reads GET /app, so a wrong id, key or API URL stops the
// server at start instead of at the first webhook.
func (s *Server) CheckApp(ctx context.Context) (publication.AppIdentity, error) {
	wantID := s.cfg.GitHub.App.IntegrationID
	client, err := s.clients.NewAppClient()
	if err != nil {
		return publication.AppIdentity{}, fmt.Errorf("github app client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	app, _, err := client.Apps.Get(ctx, "")
	if err != nil {
		return publication.AppIdentity{}, fmt.Errorf("github app check (GET /app) failed; check the App id, private key and API URL: %w", err)
	}
	if app.GetID() != wantID {
		return publication.AppIdentity{}, fmt.Errorf("github app check: GitHub reports App id %d, configured %d", app.GetID(), wantID)
	}
	if app.GetSlug() == "" {
		// The slug gives the login ("slug[bot]") by which the App finds its own comment again;
		// without it every run would post a new one.
		return publication.AppIdentity{}, fmt.Errorf("github app check: GitHub reports no slug for App %d", app.GetID())
	}
	return publication.AppIdentity{ID: app.GetID(), Slug: app.GetSlug()}, nil
}

// Shutdown marks the server not ready and stops the queue: running jobs finish until ctx's
// deadline, then are cancelled (and handed back by durable queues).
func (s *Server) Shutdown(ctx context.Context) error {
	s.ready.Store(false)
	if !s.started.Load() {
		return nil
	}
	return s.queue.Stop(ctx)
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.version})
}

func (s *Server) readiness(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// KeySet is the document served at RouteKeys: the public keys, as a JWK set with the hex form
// `lensgate receipt verify` takes. Receipt keys come first (the current one at index 0), then
// the witness keys that sign review-run observations; each entry names its role.
type KeySet struct {
	Keys []PublicKey `json:"keys"`
}

// Key roles.
const (
	RoleReceipt = "receipt"
	RoleWitness = "witness"
)

// PublicKey is one Ed25519 public key.
type PublicKey struct {
	Kty string `json:"kty"` // "OKP"
	Crv string `json:"crv"` // "Ed25519"
	Alg string `json:"alg"` // "EdDSA"
	Use string `json:"use"` // "sig"
	Kid string `json:"kid"` // hex SHA-256 of the raw key
	X   string `json:"x"`   // base64url raw key
	Hex string `json:"hex"` // hex raw key
	// Role is RoleReceipt or RoleWitness: a witness key never verifies a receipt, and a
	// receipt key never verifies an observation.
	Role string `json:"role"`
}

// NewKeySet describes receipt keys and, after them, witness keys.
func NewKeySet(keys []ed25519.PublicKey, witness ...ed25519.PublicKey) KeySet {
	ks := KeySet{Keys: []PublicKey{}}
	add := func(k ed25519.PublicKey, role string) {
		sum := sha256.Sum256(k)
		ks.Keys = append(ks.Keys, PublicKey{Kty: "OKP", Crv: "Ed25519", Alg: "EdDSA", Use: "sig",
			Kid: hex.EncodeToString(sum[:]), X: base64.RawURLEncoding.EncodeToString(k), Hex: hex.EncodeToString(k), Role: role})
	}
	for _, k := range keys {
		add(k, RoleReceipt)
	}
	for _, k := range witness {
		add(k, RoleWitness)
	}
	return ks
}

func (s *Server) serveKeys(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, NewKeySet(s.keys, s.witness...))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// recoverer turns a panic in request handling into a 500 and a log line.
func recoverer(next http.Handler, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error().Str("panic", fmt.Sprint(v)).Msg("webhook handler panicked")
				http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
