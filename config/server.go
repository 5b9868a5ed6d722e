package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Server is the configuration of `lensgate serve`. Every key can also be set from the
// environment: GitHub settings use go-githubapp's GITHUB_* names, the rest LENSGATE_*. The
// environment wins over the file, so the App runs with no file at all.
type Server struct {
	// Listen is the HTTP listen address. Env LENSGATE_LISTEN. Default ":8080".
	Listen string `yaml:"listen"`
	// LogLevel is debug, info, warn or error. Env LENSGATE_LOG_LEVEL. Default info.
	LogLevel string `yaml:"log_level"`
	// LogFormat is json or console. Env LENSGATE_LOG_FORMAT. Default json.
	LogFormat string `yaml:"log_format"`
	// ShutdownTimeout bounds the graceful shutdown (running jobs finish or are handed back).
	// Env LENSGATE_SHUTDOWN_TIMEOUT. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// SigningKeyFile is the Ed25519 key that signs receipts; its public key is served at
	// /.well-known/lensgate/keys. Env LENSGATE_SIGNING_KEY_FILE. Optional.
	SigningKeyFile string `yaml:"signing_key_file"`
	// PreviousPublicKeys are retired receipt public keys (64 hex characters each, as
	// `lensgate keygen` prints them), still served at /.well-known/lensgate/keys after the
	// current key so old receipts stay verifiable. Env LENSGATE_PREVIOUS_PUBLIC_KEYS
	// (comma-separated).
	PreviousPublicKeys []string `yaml:"previous_public_keys"`
	// WitnessKeyFile is the Ed25519 key that signs review-run observations (what the runner saw
	// beside each receipt). It must differ from the receipt key; its public key is served at
	// /.well-known/lensgate/keys with the role "witness". Env LENSGATE_WITNESS_KEY_FILE.
	// Optional: without it receipts are published without an observation.
	WitnessKeyFile string `yaml:"witness_key_file"`
	// PreviousWitnessPublicKeys are retired witness public keys, served after the current one.
	// Env LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS (comma-separated).
	PreviousWitnessPublicKeys []string `yaml:"previous_witness_public_keys"`
	// StateDir holds what must outlive a restart: the SQLite queue (queue.db) and the audit
	// ledger (audit.jsonl), unless queue.dsn and audit_file name other places. It is created at
	// start (mode 0700). Env LENSGATE_STATE_DIR. Default: $STATE_DIRECTORY when systemd's
	// StateDirectory= sets it (its first entry), else "lensgate-state" in the working directory.
	// LoadServer makes it absolute.
	StateDir string `yaml:"state_dir"`
	// AuditFile is the hash-chained JSONL ledger of every policy decision on a GitHub write.
	// Env LENSGATE_AUDIT_FILE. Default <state_dir>/audit.jsonl.
	AuditFile string `yaml:"audit_file"`
	// DryRun reviews but never writes to GitHub; outcomes are only logged.
	// Env LENSGATE_DRY_RUN. Default false.
	DryRun bool `yaml:"dry_run"`
	// PublicURL is where readers reach the App (https://lensgate.example.com). Setting it turns
	// the details page on: check runs and the advisory comment link to
	// PublicURL/details/{owner}/{repo}/{number}, and GitHub's OAuth login returns to
	// PublicURL/api/github/auth. Env LENSGATE_PUBLIC_URL. Optional.
	PublicURL string `yaml:"public_url"`

	GitHub  ServerGitHub  `yaml:"github"`
	Details ServerDetails `yaml:"details"`
	Review  ServerReview  `yaml:"review"`
	Runtime ServerRuntime `yaml:"runtimes"`
	Queue   ServerQueue   `yaml:"queue"`
	Runner  ServerRunner  `yaml:"runner"`
}

// ServerGitHub is how lensgate reaches GitHub (or GitHub Enterprise Server).
type ServerGitHub struct {
	// WebURL is the web address. Env GITHUB_WEB_URL. Default https://github.com.
	WebURL string `yaml:"web_url"`
	// V3APIURL is the REST API base. Env GITHUB_V3_API_URL. Default https://api.github.com/;
	// GitHub Enterprise Server uses https://HOST/api/v3/.
	V3APIURL string `yaml:"v3_api_url"`
	// V4APIURL is the GraphQL endpoint. Env GITHUB_V4_API_URL. Default
	// https://api.github.com/graphql; GitHub Enterprise Server uses https://HOST/api/graphql.
	V4APIURL string `yaml:"v4_api_url"`
	// Timeout bounds each GitHub API request. Env LENSGATE_GITHUB_TIMEOUT. Default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// ContentSpacing is the least time between two content-creating writes (comments, reviews,
	// reactions, labels) of one installation, as GitHub asks to stay clear of its secondary rate
	// limits; check runs are never spaced. 0 turns spacing off (for a GitHub without secondary
	// rate limits, such as a test double). Env LENSGATE_GITHUB_CONTENT_SPACING. Default 1s.
	ContentSpacing time.Duration `yaml:"content_spacing"`
	App            ServerApp     `yaml:"app"`
	OAuth          ServerOAuth   `yaml:"oauth"`
}

// ServerOAuth is the GitHub App's OAuth client, with which readers of the details page log in.
type ServerOAuth struct {
	// ClientID is the App's client id (Iv1.…). Env GITHUB_OAUTH_CLIENT_ID.
	ClientID string `yaml:"client_id"`
	// ClientSecret is one of the App's client secrets. Env GITHUB_OAUTH_CLIENT_SECRET.
	ClientSecret string `yaml:"client_secret"`
}

// ServerDetails configures the details page (on when public_url is set).
type ServerDetails struct {
	// SessionKey signs the page's session, login-state and CSRF values: at least 32 bytes as hex
	// (`openssl rand -hex 32`). Changing it logs everyone out. Env LENSGATE_DETAILS_SESSION_KEY.
	// Required when the page is on.
	SessionKey string `yaml:"session_key"`
	// PublicRepos serves the pages of public repositories without login. Env
	// LENSGATE_DETAILS_PUBLIC_REPOS. Default false.
	PublicRepos bool `yaml:"public_repos"`
	// ViewsPerMinute bounds the page views of one client (a logged-in reader, else an IP
	// address), in bursts of 20; more are answered 429. Default 60.
	ViewsPerMinute int `yaml:"views_per_minute"`
}

// ServerApp identifies the GitHub App.
type ServerApp struct {
	// IntegrationID is the App id. Env GITHUB_APP_INTEGRATION_ID. Required.
	IntegrationID int64 `yaml:"integration_id"`
	// WebhookSecret validates X-Hub-Signature-256. Env GITHUB_APP_WEBHOOK_SECRET. Required:
	// with an empty secret unsigned requests would be accepted, so the server refuses to start.
	WebhookSecret string `yaml:"webhook_secret"`
	// PrivateKey is the App's PEM private key text. Env GITHUB_APP_PRIVATE_KEY.
	PrivateKey string `yaml:"private_key"`
	// PrivateKeyFile is a file holding the PEM key, used when PrivateKey is empty.
	// Env LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE.
	PrivateKeyFile string `yaml:"private_key_file"`
}

// ServerReview says when and how lensgate reviews.
type ServerReview struct {
	// ReviewDrafts reviews draft pull requests too. Env LENSGATE_REVIEW_DRAFTS. Default false.
	ReviewDrafts bool `yaml:"review_drafts"`
	// OrgConfigRepo is the owner's repository holding the fallback .asdd.yml; empty turns the
	// fallback off. Env LENSGATE_ORG_CONFIG_REPO. Default ".github".
	OrgConfigRepo string `yaml:"org_config_repo"`
	// DefaultConfigFile is an .asdd.yml applied to repositories that have none (and no
	// organisation fallback); empty means the built-in defaults.
	// Env LENSGATE_DEFAULT_CONFIG_FILE.
	DefaultConfigFile string `yaml:"default_config_file"`
	// Command is the comment that asks for a review. Env LENSGATE_REVIEW_COMMAND.
	// Default "/lensgate review".
	Command string `yaml:"command"`
	// SnapshotAttempts bounds the tries of each GitHub read while taking a snapshot (5xx, 429,
	// timeouts). Env LENSGATE_SNAPSHOT_ATTEMPTS. Default 4.
	SnapshotAttempts int `yaml:"snapshot_attempts"`
	// JobTimeout bounds one review job. Env LENSGATE_JOB_TIMEOUT. Default 10m.
	JobTimeout time.Duration `yaml:"job_timeout"`
	// BackfillOnInstall reviews the open pull requests of repositories the App is installed on
	// (or added to). Env LENSGATE_BACKFILL_ON_INSTALL. Default false.
	BackfillOnInstall bool `yaml:"backfill_on_install"`
}

// ServerRuntime configures the review runtimes the operator allows.
type ServerRuntime struct {
	// Enabled lists the runtimes repositories may choose (comma-separated in the
	// environment). Env LENSGATE_RUNTIMES. Default [builtin].
	Enabled []string `yaml:"enabled"`
	// AdapterDir holds operator-installed exec adapters. Env LENSGATE_ADAPTER_DIR.
	AdapterDir string `yaml:"adapter_dir"`
	// OpenAIBaseURL is the OpenAI-compatible endpoint. Env LENSGATE_OPENAI_BASE_URL.
	OpenAIBaseURL string `yaml:"openai_base_url"`
	// OpenAIToken is the model token. Env LENSGATE_OPENAI_TOKEN.
	OpenAIToken string `yaml:"openai_token"`
	// OpenAIModel is the default model. Env LENSGATE_OPENAI_MODEL.
	OpenAIModel string `yaml:"openai_model"`
	// OpenAITimeout is the deadline of each whole model call (every attempt and wait), for
	// model servers slower than repositories expect, such as CPU-hosted ones; it replaces the
	// repositories' review.timeout_seconds for the openai runtime. Env LENSGATE_OPENAI_TIMEOUT.
	// Default 0: the repository's review.timeout_seconds.
	OpenAITimeout time.Duration `yaml:"openai_timeout"`
	// OpenAITemperature is the sampling temperature of every model call. Env
	// LENSGATE_OPENAI_TEMPERATURE. Default 0 (the same prompt gets the same answer).
	OpenAITemperature *float64 `yaml:"openai_temperature"`
	// OpenAISeed is the sampling seed sent with every model call where the server accepts
	// it. Env LENSGATE_OPENAI_SEED. Default 1.
	OpenAISeed *int `yaml:"openai_seed"`
	// Presets are operator-defined presets: .asdd.yml lenses may name the preset, and the
	// runtime it maps to (one of the enabled runtimes or an exec adapter) reviews them.
	// Env LENSGATE_RUNTIME_PRESETS as "name=runtime,name=runtime".
	Presets map[string]string `yaml:"presets"`
	// Delegates are operator-defined delegate presets: a lens whose preset is the name is
	// answered by another review bot, which the App asks and whose answer it checks. The
	// built-in preset codex needs no entry. File only (no environment variable).
	Delegates map[string]ServerDelegate `yaml:"delegates"`
	// MaxTokensPerInstallationPerDay caps the model tokens of each installation per UTC day,
	// counted by each replica since its start; 0 turns the cap off.
	// Env LENSGATE_MAX_TOKENS_PER_INSTALLATION_PER_DAY. Default 0.
	MaxTokensPerInstallationPerDay int `yaml:"max_tokens_per_installation_per_day"`
	// MaxConcurrentCalls bounds the model calls one review makes at once (its parts of a large
	// change, its runtime groups, a model's independent pass); 1 makes them one after another.
	// Env LENSGATE_MAX_CONCURRENT_CALLS. Default 4.
	MaxConcurrentCalls int `yaml:"max_concurrent_calls"`
	// MaxConcurrentCallsPerInstallation bounds the model calls of all reviews of one
	// installation that this process makes at once; 0 turns the bound off.
	// Env LENSGATE_MAX_CONCURRENT_CALLS_PER_INSTALLATION. Default 8.
	MaxConcurrentCallsPerInstallation int `yaml:"max_concurrent_calls_per_installation"`
	// MaxConcurrentCallsTotal bounds the model calls of all reviews this process makes at
	// once; 0 turns the bound off. Env LENSGATE_MAX_CONCURRENT_CALLS_TOTAL. Default 16.
	MaxConcurrentCallsTotal int `yaml:"max_concurrent_calls_total"`
}

// Defaults of the bounds on concurrent model calls.
const (
	DefaultMaxConcurrentCalls                = 4
	DefaultMaxConcurrentCallsPerInstallation = 8
	DefaultMaxConcurrentCallsTotal           = 16
)

// ServerDelegate describes another review bot: who it is (every id is checked, not only the
// login), how it is asked, and which of its answers count.
type ServerDelegate struct {
	// Login, UserID: the bot's account (GET /users/LOGIN shows the id).
	Login  string `yaml:"login"`
	UserID int64  `yaml:"user_id"`
	// AppID, AppSlug: the App its conversation comments are made through; 0 skips the check.
	AppID   int64  `yaml:"app_id"`
	AppSlug string `yaml:"app_slug"`
	// Request is how it is asked: "comment" (default; RequestText is posted) or "reviewers"
	// (Reviewer is requested through the requested-reviewers API).
	Request     string `yaml:"request"`
	RequestText string `yaml:"request_text"`
	Reviewer    string `yaml:"reviewer"`
	// Evidence lists the answers that count: comment, review, reaction.
	Evidence []string `yaml:"evidence"`
	// CleanHeadlines are the first lines of a clean comment; ReviewHeading is how a review
	// answer's body starts ("" for any); ReviewedCommit requires a "**Reviewed commit:** `sha`"
	// line naming the head in comment and review answers.
	CleanHeadlines []string `yaml:"clean_headlines"`
	ReviewHeading  string   `yaml:"review_heading"`
	ReviewedCommit bool     `yaml:"reviewed_commit"`
}

// ServerQueue sizes the review job queue.
type ServerQueue struct {
	// Size bounds the queued subjects; beyond it webhooks answer 503. Env LENSGATE_QUEUE_SIZE.
	// Default 100.
	Size int `yaml:"size"`
	// Workers is the number of concurrent reviews. Env LENSGATE_QUEUE_WORKERS. Default 2.
	Workers int `yaml:"workers"`
	// MaxRunningPerInstallation bounds the reviews of one installation that a process runs at
	// once while other installations have reviews waiting, so a burst of one installation
	// leaves workers to the others; with none waiting, one installation uses every worker. 0
	// means workers - 1 (at least 1); workers or more sets no bound.
	// Env LENSGATE_QUEUE_MAX_RUNNING_PER_INSTALLATION.
	MaxRunningPerInstallation int `yaml:"max_running_per_installation"`
	// EventQueueSize and EventWorkers size the webhook stage for events that need a GitHub call
	// before they become a job (comment commands, check re-runs, installations).
	// Env LENSGATE_EVENT_QUEUE_SIZE (default 100), LENSGATE_EVENT_WORKERS (default 2).
	EventQueueSize int `yaml:"event_queue_size"`
	EventWorkers   int `yaml:"event_workers"`
	// DSN selects the queue: "sqlite:///abs/path.db" (one machine), "postgres://…" (any number
	// of replicas) or "memory" (jobs lost on restart; one process only). Env LENSGATE_QUEUE_DSN.
	// Default sqlite://<state_dir>/queue.db.
	DSN string `yaml:"dsn"`
	// Lease is how long the worker of a running review may go without renewing the job's lease
	// (it renews every lease/4) before another worker takes the review over: a dead worker's
	// review resumes within about lease + lease/4. A slow review keeps its lease however long it
	// runs. 0 means 20s; at least 1s. Env LENSGATE_QUEUE_LEASE.
	Lease time.Duration `yaml:"lease"`
	// RescueAfter is River's own last-resort rescue of a job running this long; at least
	// review.job_timeout. 0 means job_timeout + 5m. Env LENSGATE_QUEUE_RESCUE_AFTER.
	RescueAfter time.Duration `yaml:"rescue_after"`
	// CatchupWindow is how far back failed webhook deliveries are redelivered at start (GitHub
	// does not retry them); 0 turns catch-up off. Env LENSGATE_CATCHUP_WINDOW. Default 24h.
	CatchupWindow time.Duration `yaml:"catchup_window"`
}

// ServerEnvVar documents one environment variable of the server configuration.
type ServerEnvVar = envVar[Server]

// ServerEnvVars lists every environment variable `lensgate serve` reads, in documentation order.
func ServerEnvVars() []ServerEnvVar {
	str, dur, num := envString[Server], envDuration[Server], envInt[Server]
	return []ServerEnvVar{
		{"LENSGATE_LISTEN", "listen", str(func(s *Server) *string { return &s.Listen })},
		{"LENSGATE_LOG_LEVEL", "log_level", str(func(s *Server) *string { return &s.LogLevel })},
		{"LENSGATE_LOG_FORMAT", "log_format", str(func(s *Server) *string { return &s.LogFormat })},
		{"LENSGATE_SHUTDOWN_TIMEOUT", "shutdown_timeout", dur(func(s *Server) *time.Duration { return &s.ShutdownTimeout })},
		{"LENSGATE_SIGNING_KEY_FILE", "signing_key_file", str(func(s *Server) *string { return &s.SigningKeyFile })},
		{"LENSGATE_WITNESS_KEY_FILE", "witness_key_file", str(func(s *Server) *string { return &s.WitnessKeyFile })},
		{"LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS", "previous_witness_public_keys", func(s *Server, v string) error {
			s.PreviousWitnessPublicKeys = splitList(v)
			return nil
		}},
		{"LENSGATE_PREVIOUS_PUBLIC_KEYS", "previous_public_keys", func(s *Server, v string) error {
			s.PreviousPublicKeys = splitList(v)
			return nil
		}},
		{"LENSGATE_STATE_DIR", "state_dir", str(func(s *Server) *string { return &s.StateDir })},
		{"LENSGATE_AUDIT_FILE", "audit_file", str(func(s *Server) *string { return &s.AuditFile })},
		{"LENSGATE_DRY_RUN", "dry_run", envBool[Server](func(s *Server) *bool { return &s.DryRun })},
		{"LENSGATE_PUBLIC_URL", "public_url", str(func(s *Server) *string { return &s.PublicURL })},
		{"GITHUB_OAUTH_CLIENT_ID", "github.oauth.client_id", str(func(s *Server) *string { return &s.GitHub.OAuth.ClientID })},
		{"GITHUB_OAUTH_CLIENT_SECRET", "github.oauth.client_secret", str(func(s *Server) *string { return &s.GitHub.OAuth.ClientSecret })},
		{"LENSGATE_DETAILS_SESSION_KEY", "details.session_key", str(func(s *Server) *string { return &s.Details.SessionKey })},
		{"LENSGATE_DETAILS_PUBLIC_REPOS", "details.public_repos", envBool[Server](func(s *Server) *bool { return &s.Details.PublicRepos })},
		{"GITHUB_WEB_URL", "github.web_url", str(func(s *Server) *string { return &s.GitHub.WebURL })},
		{"GITHUB_V3_API_URL", "github.v3_api_url", str(func(s *Server) *string { return &s.GitHub.V3APIURL })},
		{"GITHUB_V4_API_URL", "github.v4_api_url", str(func(s *Server) *string { return &s.GitHub.V4APIURL })},
		{"LENSGATE_GITHUB_TIMEOUT", "github.timeout", dur(func(s *Server) *time.Duration { return &s.GitHub.Timeout })},
		{"LENSGATE_GITHUB_CONTENT_SPACING", "github.content_spacing", dur(func(s *Server) *time.Duration { return &s.GitHub.ContentSpacing })},
		{"GITHUB_APP_INTEGRATION_ID", "github.app.integration_id", func(s *Server, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return errors.New("must be the App's numeric id, such as 123456 (the App's settings page shows it)")
			}
			s.GitHub.App.IntegrationID = n
			return nil
		}},
		{"GITHUB_APP_WEBHOOK_SECRET", "github.app.webhook_secret", str(func(s *Server) *string { return &s.GitHub.App.WebhookSecret })},
		{"GITHUB_APP_PRIVATE_KEY", "github.app.private_key", str(func(s *Server) *string { return &s.GitHub.App.PrivateKey })},
		{"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE", "github.app.private_key_file", str(func(s *Server) *string { return &s.GitHub.App.PrivateKeyFile })},
		{"LENSGATE_REVIEW_DRAFTS", "review.review_drafts", envBool[Server](func(s *Server) *bool { return &s.Review.ReviewDrafts })},
		{"LENSGATE_ORG_CONFIG_REPO", "review.org_config_repo", str(func(s *Server) *string { return &s.Review.OrgConfigRepo })},
		{"LENSGATE_DEFAULT_CONFIG_FILE", "review.default_config_file", str(func(s *Server) *string { return &s.Review.DefaultConfigFile })},
		{"LENSGATE_REVIEW_COMMAND", "review.command", str(func(s *Server) *string { return &s.Review.Command })},
		{"LENSGATE_SNAPSHOT_ATTEMPTS", "review.snapshot_attempts", num(func(s *Server) *int { return &s.Review.SnapshotAttempts })},
		{"LENSGATE_JOB_TIMEOUT", "review.job_timeout", dur(func(s *Server) *time.Duration { return &s.Review.JobTimeout })},
		{"LENSGATE_BACKFILL_ON_INSTALL", "review.backfill_on_install", envBool[Server](func(s *Server) *bool { return &s.Review.BackfillOnInstall })},
		{"LENSGATE_RUNTIMES", "runtimes.enabled", func(s *Server, v string) error {
			s.Runtime.Enabled = splitList(v)
			return nil
		}},
		{"LENSGATE_ADAPTER_DIR", "runtimes.adapter_dir", str(func(s *Server) *string { return &s.Runtime.AdapterDir })},
		{"LENSGATE_OPENAI_BASE_URL", "runtimes.openai_base_url", str(func(s *Server) *string { return &s.Runtime.OpenAIBaseURL })},
		{"LENSGATE_OPENAI_TOKEN", "runtimes.openai_token", str(func(s *Server) *string { return &s.Runtime.OpenAIToken })},
		{"LENSGATE_OPENAI_MODEL", "runtimes.openai_model", str(func(s *Server) *string { return &s.Runtime.OpenAIModel })},
		{"LENSGATE_OPENAI_TIMEOUT", "runtimes.openai_timeout", dur(func(s *Server) *time.Duration { return &s.Runtime.OpenAITimeout })},
		{"LENSGATE_OPENAI_TEMPERATURE", "runtimes.openai_temperature", func(s *Server, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return errors.New("must be a number, such as 0.2")
			}
			s.Runtime.OpenAITemperature = &f
			return nil
		}},
		{"LENSGATE_OPENAI_SEED", "runtimes.openai_seed", func(s *Server, v string) error {
			n, err := parseEnvInt(v)
			if err != nil {
				return err
			}
			s.Runtime.OpenAISeed = &n
			return nil
		}},
		{"LENSGATE_RUNTIME_PRESETS", "runtimes.presets", func(s *Server, v string) error {
			m, err := parsePresets(v)
			if err != nil {
				return err
			}
			s.Runtime.Presets = m
			return nil
		}},
		{"LENSGATE_MAX_TOKENS_PER_INSTALLATION_PER_DAY", "runtimes.max_tokens_per_installation_per_day",
			num(func(s *Server) *int { return &s.Runtime.MaxTokensPerInstallationPerDay })},
		{"LENSGATE_MAX_CONCURRENT_CALLS", "runtimes.max_concurrent_calls", num(func(s *Server) *int { return &s.Runtime.MaxConcurrentCalls })},
		{"LENSGATE_MAX_CONCURRENT_CALLS_PER_INSTALLATION", "runtimes.max_concurrent_calls_per_installation",
			num(func(s *Server) *int { return &s.Runtime.MaxConcurrentCallsPerInstallation })},
		{"LENSGATE_MAX_CONCURRENT_CALLS_TOTAL", "runtimes.max_concurrent_calls_total", num(func(s *Server) *int { return &s.Runtime.MaxConcurrentCallsTotal })},
		{"LENSGATE_QUEUE_SIZE", "queue.size", num(func(s *Server) *int { return &s.Queue.Size })},
		{"LENSGATE_QUEUE_WORKERS", "queue.workers", num(func(s *Server) *int { return &s.Queue.Workers })},
		{"LENSGATE_QUEUE_MAX_RUNNING_PER_INSTALLATION", "queue.max_running_per_installation", num(func(s *Server) *int { return &s.Queue.MaxRunningPerInstallation })},
		{"LENSGATE_EVENT_QUEUE_SIZE", "queue.event_queue_size", num(func(s *Server) *int { return &s.Queue.EventQueueSize })},
		{"LENSGATE_EVENT_WORKERS", "queue.event_workers", num(func(s *Server) *int { return &s.Queue.EventWorkers })},
		{"LENSGATE_QUEUE_DSN", "queue.dsn", str(func(s *Server) *string { return &s.Queue.DSN })},
		{"LENSGATE_QUEUE_LEASE", "queue.lease", dur(func(s *Server) *time.Duration { return &s.Queue.Lease })},
		{"LENSGATE_QUEUE_RESCUE_AFTER", "queue.rescue_after", dur(func(s *Server) *time.Duration { return &s.Queue.RescueAfter })},
		{"LENSGATE_CATCHUP_WINDOW", "queue.catchup_window", dur(func(s *Server) *time.Duration { return &s.Queue.CatchupWindow })},
		{"LENSGATE_RUNNER_URL", "runner.url", str(func(s *Server) *string { return &s.Runner.URL })},
		{"LENSGATE_RUNNER_TOKEN_FILE", "runner.token_file", str(func(s *Server) *string { return &s.Runner.TokenFile })},
		{"LENSGATE_RUNNER_WITNESS_PUBLIC_KEY", "runner.witness_public_key", str(func(s *Server) *string { return &s.Runner.WitnessPublicKey })},
		{"LENSGATE_RUNNER_CONNECT_TIMEOUT", "runner.connect_timeout", dur(func(s *Server) *time.Duration { return &s.Runner.ConnectTimeout })},
	}
}

// MemoryQueueDSN is the queue.dsn that keeps jobs in memory.
const MemoryQueueDSN = "memory"

// DefaultStateDir is the state directory when neither state_dir nor systemd's STATE_DIRECTORY
// names one; relative to the working directory.
const DefaultStateDir = "lensgate-state"

// DefaultServer returns the server configuration with every default applied and no GitHub App
// identity (which has no default). The state directory and the paths under it are resolved by
// LoadServer, so here StateDir, AuditFile and Queue.DSN are empty.
// MaxContentSpacing bounds github.content_spacing.
const MaxContentSpacing = time.Minute

func DefaultServer() *Server {
	return &Server{
		Listen:          ":8080",
		LogLevel:        "info",
		LogFormat:       "json",
		ShutdownTimeout: 30 * time.Second,
		GitHub: ServerGitHub{
			WebURL:         "https://github.com",
			V3APIURL:       "https://api.github.com/",
			V4APIURL:       "https://api.github.com/graphql",
			Timeout:        10 * time.Second,
			ContentSpacing: time.Second,
		},
		Review: ServerReview{
			OrgConfigRepo:    ".github",
			Command:          "/lensgate review",
			SnapshotAttempts: 4,
			JobTimeout:       10 * time.Minute,
		},
		Runtime: ServerRuntime{Enabled: []string{"builtin"}, MaxConcurrentCalls: DefaultMaxConcurrentCalls,
			MaxConcurrentCallsPerInstallation: DefaultMaxConcurrentCallsPerInstallation, MaxConcurrentCallsTotal: DefaultMaxConcurrentCallsTotal},
		Queue: ServerQueue{Size: 100, Workers: 2, EventQueueSize: 100, EventWorkers: 2, CatchupWindow: 24 * time.Hour},
	}
}

// LoadServer reads the server configuration: defaults, then the YAML file at path (skipped
// when path is empty), then the environment as lookup reports it (os.LookupEnv when nil). It
// reads the private key file and validates the result. Every problem is reported at once, each
// with the file line or environment variable that set it.
func LoadServer(path string, lookup func(string) (string, bool)) (*Server, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s := DefaultServer()
	var probs Problems
	fileLines := map[string]int{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("server config: %w", err)
		}
		probs, fileLines = decodeCheckedYAML(path, data, s)
	}
	fromEnv := map[string]bool{}
	probs = append(probs, applyEnv(s, ServerEnvVars(), lookup, fromEnv)...)
	if err := s.resolveState(lookup); err != nil {
		probs = append(probs, Problem{Key: "state_dir", Message: err.Error()})
	}
	keyUnread := false
	if s.GitHub.App.PrivateKey == "" && s.GitHub.App.PrivateKeyFile != "" {
		b, err := os.ReadFile(s.GitHub.App.PrivateKeyFile)
		if err != nil {
			probs = append(probs, Problem{Key: "github.app.private_key_file", Message: err.Error()})
			keyUnread = true
		}
		s.GitHub.App.PrivateKey = string(b)
	}
	for _, p := range s.validate() {
		if keyUnread && p.Key == "github.app.private_key" {
			continue // the unreadable file is the problem, already reported
		}
		// A setting from the file is shown at its line; one from the environment by its variable.
		if line, ok := fileLines[baseKey(p.Key)]; ok && !fromEnv[baseKey(p.Key)] {
			p.File, p.Line = path, line
		}
		probs = append(probs, p)
	}
	if len(probs) > 0 {
		return nil, keyProblems{what: "server config", probs: probs, name: ServerKeyName}
	}
	return s, nil
}

// resolveState fills the state directory (state_dir, else systemd's STATE_DIRECTORY, else
// DefaultStateDir), makes it absolute, and derives the default audit ledger and SQLite queue.
func (s *Server) resolveState(lookup func(string) (string, bool)) error {
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir
		// systemd sets a colon-separated list, one entry per StateDirectory= name.
		if v, ok := lookup("STATE_DIRECTORY"); ok {
			if first, _, _ := strings.Cut(v, ":"); first != "" {
				s.StateDir = first
			}
		}
	}
	abs, err := filepath.Abs(s.StateDir)
	if err != nil {
		return fmt.Errorf("server config: %s: %w", ServerKeyName("state_dir"), err)
	}
	s.StateDir = abs
	if s.AuditFile == "" {
		s.AuditFile = filepath.Join(abs, "audit.jsonl")
	}
	if s.Queue.DSN == "" {
		s.Queue.DSN = "sqlite://" + filepath.Join(abs, "queue.db")
	}
	return nil
}

// MemoryQueue reports whether jobs are kept in memory only (queue.dsn "memory", or empty in a
// configuration that LoadServer did not resolve).
func (s *Server) MemoryQueue() bool {
	return s.Queue.DSN == "" || s.Queue.DSN == MemoryQueueDSN
}

// SQLitePath is the database file of a sqlite:// queue, or "".
func (s *Server) SQLitePath() string {
	p, _ := strings.CutPrefix(s.Queue.DSN, "sqlite://")
	if p == s.Queue.DSN {
		return ""
	}
	return p
}

// parsePresets reads "name=runtime,name=runtime".
func parsePresets(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range splitList(v) {
		name, rt, ok := strings.Cut(f, "=")
		name, rt = strings.TrimSpace(name), strings.TrimSpace(rt)
		if !ok || name == "" || rt == "" {
			return nil, fmt.Errorf("%q: want name=runtime, comma-separated (deep=openai,house=builtin)", f)
		}
		out[name] = rt
	}
	return out, nil
}

// Validate reports every problem that would stop the server from working safely, one line per
// key, each naming the key and its environment variable.
func (s *Server) Validate() error {
	if p := s.validate(); len(p) > 0 {
		return keyProblems{what: "server config", probs: p, name: ServerKeyName}
	}
	return nil
}

// validate lists the problems Validate reports.
func (s *Server) validate() Problems {
	var p Problems
	add := func(key, format string, args ...any) {
		p = append(p, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	s.validateGitHub(add)
	for i, k := range s.PreviousPublicKeys {
		if b, err := hex.DecodeString(strings.TrimSpace(k)); err != nil || len(b) != 32 {
			add(fmt.Sprintf("previous_public_keys[%d]", i), "not a 64-hex Ed25519 public key")
		}
	}
	for i, k := range s.PreviousWitnessPublicKeys {
		if b, err := hex.DecodeString(strings.TrimSpace(k)); err != nil || len(b) != 32 {
			add(fmt.Sprintf("previous_witness_public_keys[%d]", i), "not a 64-hex Ed25519 public key")
		}
	}
	for _, k := range append([]string{s.Runner.WitnessPublicKey}, s.PreviousWitnessPublicKeys...) {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" && slices.ContainsFunc(s.PreviousPublicKeys, func(r string) bool {
			return strings.ToLower(strings.TrimSpace(r)) == k
		}) {
			add("previous_public_keys", "%s is also a witness key (runner.witness_public_key or previous_witness_public_keys): a key has one role", k)
		}
	}
	if s.WitnessKeyFile != "" && s.WitnessKeyFile == s.SigningKeyFile {
		add("witness_key_file", "is the receipt key file: the witness key must be a key of its own")
	}
	if s.AuditFile == "" && !s.DryRun {
		add("audit_file", "is empty: every GitHub write needs an audit record")
	}
	if s.Listen == "" {
		add("listen", "is empty")
	}
	switch s.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("log_level", "%q: want debug, info, warn or error", s.LogLevel)
	}
	switch s.LogFormat {
	case "json", "console":
	default:
		add("log_format", "%q: want json or console", s.LogFormat)
	}
	for _, n := range []struct {
		key string
		val int
	}{
		{"queue.size", s.Queue.Size}, {"queue.workers", s.Queue.Workers},
		{"queue.event_queue_size", s.Queue.EventQueueSize}, {"queue.event_workers", s.Queue.EventWorkers},
		{"review.snapshot_attempts", s.Review.SnapshotAttempts},
	} {
		if n.val < 1 {
			add(n.key, "must be at least 1")
		}
	}
	if s.Queue.MaxRunningPerInstallation < 0 {
		add("queue.max_running_per_installation", "must be 0 (workers - 1) or positive")
	}
	if s.Runtime.MaxTokensPerInstallationPerDay < 0 {
		add("runtimes.max_tokens_per_installation_per_day", "must be 0 (off) or positive")
	}
	if s.Runtime.MaxConcurrentCalls < 1 {
		add("runtimes.max_concurrent_calls", "must be at least 1")
	}
	if s.Runtime.MaxConcurrentCallsPerInstallation < 0 {
		add("runtimes.max_concurrent_calls_per_installation", "must be 0 (off) or positive")
	}
	if s.Runtime.MaxConcurrentCallsTotal < 0 {
		add("runtimes.max_concurrent_calls_total", "must be 0 (off) or positive")
	}
	if d := s.Runtime.OpenAITimeout; d < 0 || d > time.Hour {
		add("runtimes.openai_timeout", "must be 0 (review.timeout_seconds) or positive up to 1h")
	}
	if t := s.Runtime.OpenAITemperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		add("runtimes.openai_temperature", "must be between 0 and 2")
	}
	for _, d := range []struct {
		key string
		val time.Duration
	}{
		{"review.job_timeout", s.Review.JobTimeout}, {"github.timeout", s.GitHub.Timeout}, {"shutdown_timeout", s.ShutdownTimeout},
	} {
		if d.val <= 0 {
			add(d.key, "must be positive")
		}
	}
	// A spacing past a minute would hold every review of an installation for minutes per write.
	if d := s.GitHub.ContentSpacing; d < 0 || d > MaxContentSpacing {
		add("github.content_spacing", "must be 0 (off) or positive up to %s", MaxContentSpacing)
	}
	s.validateQueue(add)
	for name, rt := range s.Runtime.Presets {
		if strings.TrimSpace(name) == "" || strings.TrimSpace(rt) == "" {
			add("runtimes.presets", "%q=%q: want a preset name and a runtime", name, rt)
		}
	}
	if s.Queue.CatchupWindow < 0 {
		add("queue.catchup_window", "must not be negative (0 turns catch-up off)")
	}
	if strings.TrimSpace(s.Review.Command) == "" {
		add("review.command", "is empty")
	}
	if len(s.Runtime.Enabled) == 0 {
		add("runtimes.enabled", "is empty: no runtime could review")
	}
	s.validateDetails(add)
	s.validateRunner(add)
	return p
}

// validateGitHub checks the App's credentials and GitHub's addresses.
func (s *Server) validateGitHub(add func(key, format string, args ...any)) {
	if s.GitHub.App.IntegrationID <= 0 {
		add("github.app.integration_id", "must be the App's numeric id")
	}
	if strings.TrimSpace(s.GitHub.App.WebhookSecret) == "" {
		add("github.app.webhook_secret", "is empty: unsigned webhooks would be accepted")
	}
	if s.GitHub.App.PrivateKey == "" {
		add("github.app.private_key", "is required (or github.app.private_key_file)")
	} else if err := ServerCheckPrivateKey([]byte(s.GitHub.App.PrivateKey)); err != nil {
		add("github.app.private_key", "%v", err)
	}
	for _, u := range []struct{ key, val string }{
		{"github.web_url", s.GitHub.WebURL}, {"github.v3_api_url", s.GitHub.V3APIURL}, {"github.v4_api_url", s.GitHub.V4APIURL},
	} {
		if pu, err := url.Parse(u.val); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			add(u.key, "%q is not an http(s) URL", u.val)
		}
	}
}

// validateQueue checks the durable queue's address and its timings.
func (s *Server) validateQueue(add func(key, format string, args ...any)) {
	switch dsn := s.Queue.DSN; {
	case s.MemoryQueue(), strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
	case strings.HasPrefix(dsn, "sqlite://"):
		if strings.TrimPrefix(dsn, "sqlite://") == "" {
			add("queue.dsn", "sqlite:// needs a file path (sqlite:///var/lib/lensgate/queue.db)")
		}
	default:
		// Never echo the DSN: it may hold a password.
		add("queue.dsn", "want memory, sqlite:///PATH or postgres://…")
	}
	if s.Queue.Lease < 0 {
		add("queue.lease", "must not be negative (0: 20s)")
	} else if s.Queue.Lease > 0 && s.Queue.Lease < time.Second {
		add("queue.lease", "must be at least 1s")
	}
	if s.Queue.RescueAfter < 0 {
		add("queue.rescue_after", "must not be negative (0: job_timeout + 5m)")
	} else if s.Queue.RescueAfter > 0 && s.Queue.RescueAfter <= s.Review.JobTimeout {
		add("queue.rescue_after", "must exceed review.job_timeout (%s), or a slow job would run twice", s.Review.JobTimeout)
	}
}

// ServerKeyName renders a configuration key with its environment variable, "key (ENV)", as
// every error about a setting names it; "key[1]" is an item of key's list.
func ServerKeyName(key string) string {
	for _, ev := range ServerEnvVars() {
		if ev.Key == baseKey(key) {
			return key + " (" + ev.Name + ")"
		}
	}
	return key
}

// baseKey drops a list index: "previous_public_keys[1]" is set by previous_public_keys.
func baseKey(key string) string {
	k, _, _ := strings.Cut(key, "[")
	return k
}

// ServerPreviousKeys decodes PreviousPublicKeys (validated by Validate).
func (s *Server) ServerPreviousKeys() [][]byte { return decodeKeys(s.PreviousPublicKeys) }

// ServerPreviousWitnessKeys decodes PreviousWitnessPublicKeys (validated by Validate).
func (s *Server) ServerPreviousWitnessKeys() [][]byte { return decodeKeys(s.PreviousWitnessPublicKeys) }

func decodeKeys(keys []string) [][]byte {
	var out [][]byte
	for _, k := range keys {
		if b, err := hex.DecodeString(strings.TrimSpace(k)); err == nil && len(b) == 32 {
			out = append(out, b)
		}
	}
	return out
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ServerCheckPrivateKey reports whether pemBytes holds an RSA private key GitHub Apps accept
// (PKCS#1 as GitHub issues it, or PKCS#8).
func ServerCheckPrivateKey(pemBytes []byte) error {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return errors.New("not a PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k.Validate()
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return errors.New("not an RSA private key (PKCS#1 or PKCS#8)")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return errors.New("not an RSA private key")
	}
	return rk.Validate()
}

// MinSessionKeyBytes is the shortest details.session_key accepted.
const MinSessionKeyBytes = 32

// validateDetails checks the details page settings: they matter only once public_url is set.
func (s *Server) validateDetails(add func(key, format string, args ...any)) {
	o := s.GitHub.OAuth
	if (o.ClientID == "") != (o.ClientSecret == "") {
		add("github.oauth.client_secret", "client_id and client_secret go together")
	}
	if s.PublicURL == "" {
		return
	}
	if pu, err := url.Parse(s.PublicURL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" ||
		(pu.Path != "" && pu.Path != "/") || pu.RawQuery != "" {
		add("public_url", "%q is not an http(s) origin such as https://lensgate.example.com", s.PublicURL)
	}
	if _, err := s.SessionKeyBytes(); err != nil {
		add("details.session_key", "%v", err)
	}
	if o.ClientID == "" && !s.Details.PublicRepos {
		add("github.oauth.client_id", "the details page needs the App's OAuth client (or details.public_repos to serve public repositories only)")
	}
}

// SessionKeyBytes decodes details.session_key.
func (s *Server) SessionKeyBytes() ([]byte, error) {
	k := strings.TrimSpace(s.Details.SessionKey)
	if k == "" {
		return nil, errors.New("is required when public_url is set (openssl rand -hex 32)")
	}
	b, err := hex.DecodeString(k)
	if err != nil {
		return nil, errors.New("must be hex (openssl rand -hex 32)")
	}
	if len(b) < MinSessionKeyBytes {
		return nil, fmt.Errorf("has %d bytes; want at least %d", len(b), MinSessionKeyBytes)
	}
	return b, nil
}
