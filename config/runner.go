package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServerRunner points `lensgate serve` at a runner process (`lensgate runner`) that runs the
// review runtimes and signs the observations with the witness key, so that the process that
// composes and signs the receipt never holds that key. Unset, the worker runs the runtimes
// itself and signs with witness_key_file.
type ServerRunner struct {
	// URL is where the runner listens: unix:///path/runner.sock or http://host:port.
	// Env LENSGATE_RUNNER_URL.
	URL string `yaml:"url"`
	// TokenFile holds the token shared with the runner (at least 32 bytes). Env
	// LENSGATE_RUNNER_TOKEN_FILE. Required with url.
	TokenFile string `yaml:"token_file"`
	// WitnessPublicKey is the runner's witness public key (64 hex characters). The worker
	// refuses a runner with another key; the web role, which never talks to the runner,
	// publishes it at /.well-known/lensgate/keys. Env LENSGATE_RUNNER_WITNESS_PUBLIC_KEY.
	// Optional for the worker, which reads the key from the runner.
	WitnessPublicKey string `yaml:"witness_public_key"`
	// ConnectTimeout is how long the worker waits at start for the runner to answer.
	// Env LENSGATE_RUNNER_CONNECT_TIMEOUT. Default 30s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
}

// validateRunner checks the runner settings of the server.
func (s *Server) validateRunner(add func(key, format string, args ...any)) {
	r := s.Runner
	if r.URL == "" {
		if r.TokenFile != "" || r.WitnessPublicKey != "" {
			add("runner.url", "is empty, but other runner settings are set")
		}
		return
	}
	if err := CheckRunnerURL(r.URL); err != nil {
		add("runner.url", "%v", err)
	}
	if r.TokenFile == "" {
		add("runner.token_file", "is required with runner.url: the runner takes only authenticated requests")
	}
	if r.WitnessPublicKey != "" {
		if b, err := hex.DecodeString(r.WitnessPublicKey); err != nil || len(b) != 32 {
			add("runner.witness_public_key", "not a 64-hex Ed25519 public key")
		}
	}
	if s.WitnessKeyFile != "" {
		add("witness_key_file", "is set with runner.url: the witness key belongs to the runner's configuration, never to the process that composes receipts")
	}
	if r.ConnectTimeout < 0 {
		add("runner.connect_timeout", "must not be negative")
	}
}

// CheckRunnerURL checks a runner address: unix:///absolute/path or http://host:port.
func CheckRunnerURL(u string) error {
	if rest, ok := strings.CutPrefix(u, "unix://"); ok {
		if !filepath.IsAbs(rest) {
			return fmt.Errorf("%q: want unix:///absolute/path.sock", u)
		}
		return nil
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "http" || pu.Host == "" || (pu.Path != "" && pu.Path != "/") {
		return fmt.Errorf("%q: want unix:///path.sock or http://host:port", u)
	}
	return nil
}

// Runner is the configuration of `lensgate runner`: where it listens, the token it shares
// with the workers, the witness key, and the runtimes it runs (the same keys as the server's
// runtimes section). Every key can also be set from the environment; the environment wins.
type Runner struct {
	// Listen is unix:///path/runner.sock (created mode 0660) or host:port.
	// Env LENSGATE_RUNNER_LISTEN. Required.
	Listen string `yaml:"listen"`
	// TokenFile holds the shared token. Env LENSGATE_RUNNER_TOKEN_FILE. Required.
	TokenFile string `yaml:"token_file"`
	// WitnessKeyFile is the Ed25519 witness key. Env LENSGATE_WITNESS_KEY_FILE. Required.
	WitnessKeyFile string `yaml:"witness_key_file"`
	// PreviousWitnessPublicKeys are retired witness public keys (64 hex each): observations
	// they signed still vouch for findings carried from earlier heads.
	// Env LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS (comma-separated).
	PreviousWitnessPublicKeys []string `yaml:"previous_witness_public_keys"`
	// LogLevel and LogFormat as for the server. Env LENSGATE_LOG_LEVEL, LENSGATE_LOG_FORMAT.
	LogLevel  string `yaml:"log_level"`
	LogFormat string `yaml:"log_format"`
	// WorkRoot is where work directories for adapters are laid out ("" for the system
	// temporary directory). Env LENSGATE_RUNNER_WORK_ROOT.
	WorkRoot string `yaml:"work_root"`
	// MaxRuns bounds the review records kept at once, RunTTL how long one is kept after its
	// first call. Env LENSGATE_RUNNER_MAX_RUNS (default 256), LENSGATE_RUNNER_RUN_TTL (30m).
	MaxRuns int           `yaml:"max_runs"`
	RunTTL  time.Duration `yaml:"run_ttl"`
	// MaxRequestBytes bounds a request body. Env LENSGATE_RUNNER_MAX_REQUEST_BYTES. Default 64 MiB.
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxConcurrent bounds the calls that run at once. Env LENSGATE_RUNNER_MAX_CONCURRENT.
	// Default 4.
	MaxConcurrent int `yaml:"max_concurrent"`
	// ShutdownTimeout bounds the graceful shutdown. Env LENSGATE_SHUTDOWN_TIMEOUT. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	Runtime         ServerRuntime `yaml:"runtimes"`
}

// RunnerEnvVars lists every environment variable `lensgate runner` reads.
func RunnerEnvVars() []string {
	out := []string{}
	for _, ev := range runnerEnv() {
		out = append(out, ev.Name)
	}
	return out
}

type runnerEnvVar = envVar[Runner]

func runnerEnv() []runnerEnvVar {
	str, dur, num := envString[Runner], envDuration[Runner], envInt[Runner]
	vars := []runnerEnvVar{
		{"LENSGATE_RUNNER_LISTEN", "listen", str(func(r *Runner) *string { return &r.Listen })},
		{"LENSGATE_RUNNER_TOKEN_FILE", "token_file", str(func(r *Runner) *string { return &r.TokenFile })},
		{"LENSGATE_WITNESS_KEY_FILE", "witness_key_file", str(func(r *Runner) *string { return &r.WitnessKeyFile })},
		{"LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS", "previous_witness_public_keys", func(r *Runner, v string) error {
			r.PreviousWitnessPublicKeys = splitList(v)
			return nil
		}},
		{"LENSGATE_LOG_LEVEL", "log_level", str(func(r *Runner) *string { return &r.LogLevel })},
		{"LENSGATE_LOG_FORMAT", "log_format", str(func(r *Runner) *string { return &r.LogFormat })},
		{"LENSGATE_RUNNER_WORK_ROOT", "work_root", str(func(r *Runner) *string { return &r.WorkRoot })},
		{"LENSGATE_RUNNER_MAX_RUNS", "max_runs", num(func(r *Runner) *int { return &r.MaxRuns })},
		{"LENSGATE_RUNNER_RUN_TTL", "run_ttl", dur(func(r *Runner) *time.Duration { return &r.RunTTL })},
		{"LENSGATE_RUNNER_MAX_REQUEST_BYTES", "max_request_bytes", func(r *Runner, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return errors.New("must be a whole number of bytes, such as 26214400")
			}
			r.MaxRequestBytes = n
			return nil
		}},
		{"LENSGATE_RUNNER_MAX_CONCURRENT", "max_concurrent", num(func(r *Runner) *int { return &r.MaxConcurrent })},
		{"LENSGATE_SHUTDOWN_TIMEOUT", "shutdown_timeout", dur(func(r *Runner) *time.Duration { return &r.ShutdownTimeout })},
	}
	// The runtimes section reads the server's variables.
	for _, ev := range ServerEnvVars() {
		if strings.HasPrefix(ev.Key, "runtimes.") && !serverOnlyRuntimeKey(ev.Key) {
			set := ev.set
			vars = append(vars, runnerEnvVar{Name: ev.Name, Key: ev.Key, set: func(r *Runner, v string) error {
				s := &Server{Runtime: r.Runtime}
				err := set(s, v)
				r.Runtime = s.Runtime
				return err
			}})
		}
	}
	return vars
}

// serverOnlyRuntimeKey reports whether a runtimes setting bounds a review as a whole, which
// the server applies before it sends a call to the runner.
func serverOnlyRuntimeKey(key string) bool {
	switch key {
	case "runtimes.max_tokens_per_installation_per_day", "runtimes.max_concurrent_calls",
		"runtimes.max_concurrent_calls_per_installation", "runtimes.max_concurrent_calls_total":
		return true
	}
	return false
}

// DefaultRunner returns the runner configuration with every default applied.
func DefaultRunner() *Runner {
	return &Runner{
		LogLevel: "info", LogFormat: "json", MaxRuns: 256, RunTTL: 30 * time.Minute, MaxRequestBytes: 64 << 20,
		MaxConcurrent: 4, ShutdownTimeout: 30 * time.Second, Runtime: ServerRuntime{Enabled: []string{"builtin"}},
	}
}

// LoadRunner reads the runner configuration: defaults, then the YAML file at path (skipped when
// empty), then the environment as lookup reports it (os.LookupEnv when nil), and validates it.
func LoadRunner(path string, lookup func(string) (string, bool)) (*Runner, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	r := DefaultRunner()
	var probs Problems
	fileLines := map[string]int{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("runner config: %w", err)
		}
		probs, fileLines = decodeCheckedYAML(path, data, r)
	}
	fromEnv := map[string]bool{}
	probs = append(probs, applyEnv(r, runnerEnv(), lookup, fromEnv)...)
	for _, p := range r.validate() {
		if line, ok := fileLines[baseKey(p.Key)]; ok && !fromEnv[baseKey(p.Key)] {
			p.File, p.Line = path, line
		}
		probs = append(probs, p)
	}
	if len(probs) > 0 {
		return nil, keyProblems{what: "runner config", probs: probs, name: RunnerKeyName}
	}
	return r, nil
}

// RunnerKeyName renders a runner configuration key with its environment variable.
func RunnerKeyName(key string) string {
	for _, ev := range runnerEnv() {
		if ev.Key == baseKey(key) {
			return key + " (" + ev.Name + ")"
		}
	}
	return key
}

// Validate reports every problem of a runner configuration, one line per key.
func (r *Runner) Validate() error {
	if p := r.validate(); len(p) > 0 {
		return keyProblems{what: "runner config", probs: p, name: RunnerKeyName}
	}
	return nil
}

// validate lists the problems Validate reports.
func (r *Runner) validate() Problems {
	var p Problems
	add := func(key, format string, args ...any) {
		p = append(p, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case r.Listen == "":
		add("listen", "is required: unix:///path/runner.sock or host:port")
	case strings.HasPrefix(r.Listen, "unix://"):
		if !filepath.IsAbs(strings.TrimPrefix(r.Listen, "unix://")) {
			add("listen", "%q: want unix:///absolute/path.sock", r.Listen)
		}
	case !strings.Contains(r.Listen, ":"):
		add("listen", "%q: want unix:///path.sock or host:port", r.Listen)
	}
	if r.TokenFile == "" {
		add("token_file", "is required: the runner takes only requests authenticated with the shared token")
	}
	if r.WitnessKeyFile == "" {
		add("witness_key_file", "is required: the runner signs observations with it")
	}
	for i, k := range r.PreviousWitnessPublicKeys {
		if b, err := hex.DecodeString(strings.TrimSpace(k)); err != nil || len(b) != 32 {
			add("previous_witness_public_keys", "[%d]: not a 64-hex Ed25519 public key", i)
		}
	}
	switch r.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("log_level", "%q: want debug, info, warn or error", r.LogLevel)
	}
	switch r.LogFormat {
	case "json", "console":
	default:
		add("log_format", "%q: want json or console", r.LogFormat)
	}
	if r.MaxRuns < 1 {
		add("max_runs", "must be at least 1")
	}
	if r.MaxConcurrent < 1 {
		add("max_concurrent", "must be at least 1")
	}
	if r.RunTTL < time.Minute {
		add("run_ttl", "must be at least 1m (a review's record must outlive the review)")
	}
	if r.MaxRequestBytes < 1<<20 {
		add("max_request_bytes", "must be at least 1 MiB")
	}
	if r.ShutdownTimeout <= 0 {
		add("shutdown_timeout", "must be positive")
	}
	if len(r.Runtime.Enabled) == 0 {
		add("runtimes.enabled", "is empty: no runtime could review")
	}
	return p
}

// RunnerPreviousWitnessKeys decodes PreviousWitnessPublicKeys (validated by Validate).
func (r *Runner) RunnerPreviousWitnessKeys() [][]byte { return decodeKeys(r.PreviousWitnessPublicKeys) }
