// Package durable keeps review jobs in a database with River, so a restart or a crash loses
// nothing and any number of replicas can share the work: PostgreSQL for several replicas, SQLite
// for a single machine.
//
// It keeps the guarantees of queue.Queue. Beside River's own tables it keeps two: the accepted
// delivery ids (a redelivered webhook returns queue.ErrDuplicate) and the newest job per subject
// key (a head whose event was received later cancels the older job, queued or running, and a
// worker asks queue.CheckCurrent before publishing). Failures marked queue.Permanent are not retried; others
// are retried with exponential backoff until MaxAttempts, after which River discards the job (the
// dead-letter state, counted in metrics and logged).
package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"
	"modernc.org/sqlite"

	"github.com/lensgate/lensgate/handlers/queue"
)

// SharedFetchCooldown is River's own fetch cooldown, for a process whose workers share it with
// webhook handlers (see Options.FetchCooldown).
const SharedFetchCooldown = river.FetchCooldownDefault

// ErrInsertOnly is returned by Start on a queue opened with Options.InsertOnly.
var ErrInsertOnly = errors.New("durable queue: opened insert-only (web role), cannot start workers")

// Options tune a durable queue. The zero value is a sensible production setting.
type Options struct {
	// InsertOnly opens the queue for Enqueue only (the web role): Start fails and the process runs
	// no River maintenance. Worker replicas leave it false.
	InsertOnly bool
	// Workers is how many jobs this process runs at once (default 4).
	Workers int
	// MaxRunningPerInstallation bounds the jobs of one installation this process runs at once
	// while other installations have jobs waiting, so a burst of one installation leaves workers
	// to the others: a job of an installation at the bound is snoozed without taking a worker
	// when a job of another installation waits, and runs when none does (see fair.go). Zero
	// takes queue.DefaultMaxRunningPerInstallation(Workers); a negative value sets no bound.
	MaxRunningPerInstallation int
	// JobTimeout cancels a job's context after this long; the attempt then counts as an
	// operational failure and is retried (default 15m).
	JobTimeout time.Duration
	// MaxAttempts is how often a job runs before it is discarded (default 6).
	MaxAttempts int
	// RetryBase and RetryMax bound the exponential backoff between attempts (default 15s and 15m).
	RetryBase, RetryMax time.Duration
	// RescueStuckJobsAfter is River's own rescue of a job running this long, at least JobTimeout
	// (default JobTimeout + 5m). The lease below takes over a dead worker's job long before.
	RescueStuckJobsAfter time.Duration
	// LeaseTTL is how long a running job's worker may go without renewing the job's lease (it
	// renews every LeaseTTL/4) before another replica takes the job over (default 20s; minimum
	// 1s). A slow review whose worker is alive keeps its lease however long it runs.
	LeaseTTL time.Duration
	// MaxQueued makes Enqueue return queue.ErrFull when this many jobs are waiting (0: no limit).
	MaxQueued int
	// Retention is how long delivery ids and subject heads are remembered (default 7 days). River
	// keeps finished jobs for its own retention periods.
	Retention time.Duration
	// FetchPollInterval is how often workers look for jobs when no notification arrives
	// (default River's 1s; SQLite always polls).
	FetchPollInterval time.Duration
	// FetchCooldown is the least time between two fetches of this replica's workers (default
	// 1ms). A worker that finishes a job fetches the next one at once unless the previous fetch
	// is more recent; River's own default of 100ms would hold one worker to about 10 jobs a
	// second. Fetches only happen while a worker is free, so a short cooldown costs nothing when
	// the queue is idle or every worker is busy. A process that also answers webhooks may use
	// SharedFetchCooldown instead, so that its workers leave the webhooks the CPU and the
	// database.
	FetchCooldown time.Duration
	// ClientID names this replica in River's tables (default host-pid).
	ClientID string
	// MaxConns bounds the PostgreSQL pool (default 10). SQLite always uses one connection.
	MaxConns int32
	// Logger receives job failures, dead letters and River's warnings. Default: no logging.
	Logger *zerolog.Logger
	// Registerer receives the queue's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 15 * time.Minute
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 15 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 15 * time.Minute
	}
	if o.RetryMax < o.RetryBase {
		o.RetryMax = o.RetryBase
	}
	if o.RescueStuckJobsAfter < o.JobTimeout {
		o.RescueStuckJobsAfter = o.JobTimeout + 5*time.Minute
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 20 * time.Second
	}
	o.LeaseTTL = max(o.LeaseTTL, time.Second)
	if o.Retention <= 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.FetchCooldown <= 0 {
		o.FetchCooldown = time.Millisecond
	}
	o.FetchCooldown = max(o.FetchCooldown, river.FetchCooldownMin)
	if o.FetchPollInterval > 0 && o.FetchPollInterval < o.FetchCooldown {
		o.FetchPollInterval = o.FetchCooldown
	}
	if o.ClientID == "" {
		host, _ := os.Hostname()
		o.ClientID = sanitizeID(fmt.Sprintf("%s-%d", host, os.Getpid()))
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 10
	}
	if o.Logger == nil {
		nop := zerolog.Nop()
		o.Logger = &nop
	}
	return o
}

// sanitizeID keeps the characters River accepts in a client id.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}

// Open connects to the database named by dsn, applies River's and the queue's migrations and
// returns the queue. dsn is "postgres://user@host:port/db?…" (PostgreSQL, several replicas) or
// "sqlite:///abs/path/queue.db" / "sqlite://relative/queue.db" (one machine). Stop closes it.
func Open(ctx context.Context, dsn string, opts Options) (queue.Queue, error) {
	opts = opts.withDefaults()
	switch {
	case isPostgres(dsn):
		return openPostgres(ctx, dsn, opts)
	case strings.HasPrefix(dsn, "sqlite://"):
		return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite://"), opts)
	default:
		return nil, fmt.Errorf("durable queue: unsupported DSN scheme (want postgres:// or sqlite://)")
	}
}

func openPostgres(ctx context.Context, dsn string, opts Options) (queue.Queue, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may echo the DSN, which can hold a password.
		return nil, errors.New("durable queue: invalid PostgreSQL DSN")
	}
	cfg.MaxConns = opts.MaxConns
	// Connections open before the first webhook needs one: opening one (TCP, authentication, a
	// new server process) put tens of milliseconds on the first deliveries after a start.
	cfg.MinConns = min(opts.MaxConns, int32(opts.Workers)+2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("durable queue: connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("durable queue: connect to PostgreSQL: %w", err)
	}
	db := pgxDB{pool: pool}
	driver := riverpgxv5.New(pool)
	// Replicas starting together migrate one after the other. River runs each migration in its own
	// transaction, so the lock is a session lock on a connection held for the duration.
	serialize := func(ctx context.Context, fn func() error) error {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(advisoryMigrationID)); err != nil {
			return err
		}
		defer func() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(advisoryMigrationID))
		}()
		return fn()
	}
	q, err := newQueue[pgx.Tx](ctx, "postgres", driver, db, serialize, postgresLease, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return q, nil
}

func openSQLite(ctx context.Context, path string, opts Options) (queue.Queue, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, errors.New("durable queue: sqlite DSN needs a file path (sqlite:///path/queue.db)")
	}
	v := url.Values{}
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "busy_timeout(10000)")
	v.Add("_pragma", "synchronous(NORMAL)")
	v.Add("_pragma", "foreign_keys(ON)")
	v.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	// "file:" + path, not url.URL.String, which would read a relative path as an authority.
	uri := "file:" + (&url.URL{Path: path}).EscapedPath() + "?"
	// The queue's connection leaves checkpoints to the checkpointer's (see checkpoint.go).
	queueURI := uri + v.Encode() + "&" + url.Values{"_pragma": {fmt.Sprintf("wal_autocheckpoint(%d)", walFallbackPages)}}.Encode()
	sqldb := sql.OpenDB(cachingConnector{dsn: queueURI, drv: &sqlite.Driver{}})
	// SQLite runs one writer at a time; one connection avoids SQLITE_BUSY between River's
	// goroutines and makes each transaction exclusive.
	sqldb.SetMaxOpenConns(1)
	if err := sqldb.PingContext(ctx); err != nil {
		_ = sqldb.Close()
		return nil, fmt.Errorf("durable queue: open SQLite %s: %w", path, err)
	}
	ckdb := sql.OpenDB(cachingConnector{dsn: uri + v.Encode(), drv: &sqlite.Driver{}})
	ckdb.SetMaxOpenConns(1)
	log := zerolog.Nop()
	if opts.Logger != nil {
		log = opts.Logger.With().Str("component", "queue").Str("backend", "sqlite").Logger()
	}
	ck := startCheckpointer(ckdb, log, checkpointEvery, checkpointIdleMax)
	q, err := newQueue[*sql.Tx](ctx, "sqlite", riversqlite.New(sqldb), newSQLiteDB(sqldb, ck),
		func(_ context.Context, fn func() error) error { return fn() }, sqliteLease, opts)
	if err != nil {
		ck.close()
		_ = sqldb.Close()
		return nil, err
	}
	return q, nil
}

// reviewArgs is the River job. Key, Head and Rerun form the unique key: one active job per
// subject head, unless an explicit re-run asked for another.
type reviewArgs struct {
	Key   string    `json:"key" river:"unique"`
	Head  string    `json:"head" river:"unique"`
	Rerun string    `json:"rerun,omitempty" river:"unique"`
	Job   queue.Job `json:"job"`
}

func (reviewArgs) Kind() string { return "lensgate_review" }

// pruneArgs is the periodic clean-up of old delivery ids and subject heads.
type pruneArgs struct{}

func (pruneArgs) Kind() string { return "lensgate_queue_prune" }

// activeStates are the states in which a job still runs or will run. River requires available,
// pending, running and scheduled in a unique job's state set.
var activeStates = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRetryable,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// riverQueue implements queue.Queue over a River client of either driver.
type riverQueue[TTx any] struct {
	backend string
	opts    Options
	log     zerolog.Logger
	client  *river.Client[TTx]
	db      database[TTx]
	lq      leaseQueries
	metrics *metrics
	fair    *installationCap

	writer *enqueueWriter // nil: each Enqueue runs its own transaction
	after  sync.WaitGroup // work that follows a commit (cancelSuperseded)

	handler atomic.Pointer[queue.Handler]
	closed  atomic.Bool // set by Stop; Enqueue then refuses work like a full queue

	mu          sync.Mutex
	started     bool
	stopped     bool
	stopWatcher context.CancelFunc
}

func newQueue[TTx any](ctx context.Context, backend string, driver riverdriver.Driver[TTx], db database[TTx], serialize func(context.Context, func() error) error, lq leaseQueries, opts Options) (*riverQueue[TTx], error) {
	q := &riverQueue[TTx]{
		backend: backend,
		opts:    opts,
		lq:      lq,
		log:     opts.Logger.With().Str("component", "queue").Str("backend", backend).Logger(),
		db:      db,
		fair:    newInstallationCap(opts.MaxRunningPerInstallation, opts.Workers),
	}

	migrator, err := rivermigrate.New[TTx](driver, &rivermigrate.Config{Logger: q.riverLogger()})
	if err != nil {
		return nil, fmt.Errorf("durable queue: migrator: %w", err)
	}
	err = serialize(ctx, func() error {
		if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("river migrations: %w", err)
		}
		return withTx(ctx, db, func(tx TTx) error {
			had, err := migrateSchema(ctx, db, tx, backend, time.Now().UnixMilli())
			if err == nil && had != schemaVersion {
				q.log.Info().Int("schema_from", had).Int("schema_to", schemaVersion).Msg("queue schema migrated")
			}
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("durable queue: migrate: %w", err)
	}

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &reviewWorker[TTx]{q: q}); err != nil {
		return nil, fmt.Errorf("durable queue: register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &pruneWorker[TTx]{q: q}); err != nil {
		return nil, fmt.Errorf("durable queue: register worker: %w", err)
	}
	cfg := &river.Config{
		ID:                   opts.ClientID,
		JobTimeout:           opts.JobTimeout,
		MaxAttempts:          opts.MaxAttempts,
		RescueStuckJobsAfter: opts.RescueStuckJobsAfter,
		RetryPolicy:          backoffPolicy{base: opts.RetryBase, max: opts.RetryMax},
		Logger:               q.riverLogger(),
		Workers:              workers,
		FetchPollInterval:    opts.FetchPollInterval,
	}
	if opts.FetchPollInterval > 0 && opts.FetchPollInterval < river.FetchCooldownDefault {
		cfg.FetchCooldown = opts.FetchPollInterval
	}
	if !opts.InsertOnly {
		// The cooldown is the queue's, not the client's: the client's also spaces the insert
		// notifications of Enqueue, each of which serialises commits on PostgreSQL.
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers, FetchCooldown: opts.FetchCooldown}}
		cfg.PeriodicJobs = []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
				return pruneArgs{}, nil
			}, &river.PeriodicJobOpts{RunOnStart: true, ID: "lensgate_queue_prune"}),
		}
	}
	client, err := river.NewClient[TTx](driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("durable queue: river client: %w", err)
	}
	q.client = client
	q.metrics = newMetrics(opts.Registerer, q.countByState)
	if usesWriter(backend) {
		q.writer = newEnqueueWriter(1, q.enqueueBatch)
	}
	return q, nil
}

// riverLogger forwards River's warnings and errors to the zerolog logger.
func (q *riverQueue[TTx]) riverLogger() *slog.Logger {
	l := q.log.Level(max(zerolog.WarnLevel, q.log.GetLevel()))
	return slog.New(zerolog.NewSlogHandler(l))
}

// checkCurrent returns an error wrapping queue.ErrNotCurrent unless jobID is still the newest job
// of its subject.
func (q *riverQueue[TTx]) checkCurrent(ctx context.Context, key string, jobID int64) error {
	var current int64
	var head string
	err := q.db.queryOne(ctx, sqlCurrentJob, []any{key}, &current, &head)
	if err != nil && !errors.Is(err, errNoRows) {
		return fmt.Errorf("durable queue: check current job: %w", err)
	}
	if current != jobID {
		return fmt.Errorf("job %d for %s: %w", jobID, key, &queue.SupersededError{Head: head})
	}
	return nil
}

// Start runs this replica's workers with h. It returns at once; the workers run until ctx is
// cancelled or Stop is called.
func (q *riverQueue[TTx]) Start(ctx context.Context, h queue.Handler) error {
	if q.opts.InsertOnly {
		return ErrInsertOnly
	}
	if h == nil {
		return errors.New("durable queue: nil handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return errors.New("durable queue: already stopped")
	}
	if q.started {
		return errors.New("durable queue: already started")
	}
	q.handler.Store(&h)
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("durable queue: start workers: %w", err)
	}
	q.started = true
	wctx, stop := context.WithCancel(ctx)
	q.stopWatcher = stop
	go q.watchLeases(wctx)
	q.log.Info().Str("client_id", q.opts.ClientID).Int("workers", q.opts.Workers).Msg("queue workers started")
	return nil
}

// Stop stops fetching jobs, waits up to ctx's deadline for running jobs, then cancels the rest
// (they stay in the database and run again later) and closes the database.
func (q *riverQueue[TTx]) Stop(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return nil
	}
	q.stopped = true
	q.closed.Store(true)
	var stopErr error
	if q.stopWatcher != nil {
		q.stopWatcher()
	}
	if q.started {
		if err := q.client.Stop(ctx); err != nil {
			hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err = q.client.StopAndCancel(hardCtx)
			cancel()
			if err != nil {
				stopErr = fmt.Errorf("durable queue: stop workers: %w", err)
			}
		}
	}
	if q.writer != nil {
		q.writer.close()
	}
	q.after.Wait()
	q.metrics.unregister()
	q.db.close()
	return stopErr
}

// countByState feeds the jobs-by-state gauge, which shows the dead-letter backlog (discarded).
func (q *riverQueue[TTx]) countByState(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	err := withTx(ctx, q.db, func(tx TTx) error {
		return q.db.queryRows(ctx, tx, sqlCountByState, nil, func(scan func(...any) error) error {
			var state string
			var n int64
			if err := scan(&state, &n); err != nil {
				return err
			}
			out[state] = float64(n)
			return nil
		})
	})
	return out, err
}
