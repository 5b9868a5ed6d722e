package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/appconfig"

	"github.com/lensgate/lensgate/config"
)

// ConfigPath is the repository configuration file lensgate reads.
const ConfigPath = ".asdd.yml"

// YAGA policy files, read from the base branch only when it has no .asdd.yml, in this order. A
// pyproject.toml is a configuration only when it has a [tool.yaga] table.
const (
	YAGAPath      = ".yaga.toml"
	PyprojectPath = "pyproject.toml"
)

// yagaTable marks a pyproject.toml that carries a YAGA policy; `lensgate review` uses the same
// test, so the App and a local review pick the same file.
var yagaTable = []byte("[tool.yaga")

// IsYAGAPyproject reports whether a pyproject.toml's content holds a YAGA policy.
func IsYAGAPyproject(data []byte) bool { return bytes.Contains(data, yagaTable) }

// Config origins reported in ConfigSource.Origin.
const (
	OriginRepository   = "repository"
	OriginOrganization = "organization"
	OriginRemote       = "remote"
	OriginServer       = "server"
)

// TrustedConfig is a repository's policy as read from a place the pull request cannot change.
type TrustedConfig struct {
	Repo     *config.Repo
	Source   ConfigSource
	Problems config.Problems // non-empty: the file is invalid and Repo is nil
	// RepoFile is the repository's own file the policy came from (ConfigPath, YAGAPath or
	// PyprojectPath); empty for the organisation or server default.
	RepoFile string
}

// ConfigLoader reads the policy from a trusted ref: the repository's .asdd.yml at the given ref
// (the base branch for pull requests) or its remote: reference, then the repository's
// .yaga.toml, then its pyproject.toml [tool.yaga], then the owner's organisation repository's
// .asdd.yml, then the server default. The .asdd.yml reads use go-githubapp's appconfig loader.
type ConfigLoader struct {
	repo     *appconfig.Loader
	org      *appconfig.Loader // nil: no organisation fallback
	fallback *config.Repo
}

// NewConfigLoader builds a loader. orgRepo is the owner's fallback repository (".github"; empty
// disables it); fallback is the server default (config.DefaultRepo() when nil).
func NewConfigLoader(orgRepo string, fallback *config.Repo) *ConfigLoader {
	if fallback == nil {
		fallback = config.DefaultRepo()
	}
	l := &ConfigLoader{
		repo:     appconfig.NewLoader([]string{ConfigPath}, appconfig.WithOwnerDefault("", nil)),
		fallback: fallback,
	}
	if orgRepo != "" {
		// No repository paths: LoadConfig goes straight to the owner's default repository. A
		// remote: reference there without a path still means .asdd.yml.
		l.org = appconfig.NewLoader(nil, appconfig.WithOwnerDefault(orgRepo, []string{ConfigPath}),
			appconfig.WithRemoteRefParser(func(path string, b []byte) (*appconfig.RemoteRef, error) {
				r, err := appconfig.YAMLRemoteRefParser(path, b)
				if r != nil && r.Path == "" {
					r.Path = ConfigPath
				}
				return r, err
			}))
	}
	return l
}

// Load reads the configuration of owner/repo at ref. ref must be trusted (a base branch or the
// default branch), never a pull request head. An invalid file is not an error: it comes back
// with its Problems so the caller reports it instead of reviewing with defaults. The error is
// for GitHub failures only.
func (l *ConfigLoader) Load(ctx context.Context, client *github.Client, owner, repo, ref string) (TrustedConfig, error) {
	c, err := l.repo.LoadConfig(ctx, client, owner, repo, ref)
	if err != nil {
		return TrustedConfig{}, fmt.Errorf("load %s from %s: %w", c.Path, c.Source, err)
	}
	if c.IsUndefined() {
		// The YAGA files are read only when .asdd.yml is absent, so a repository configured
		// with .asdd.yml pays no extra read.
		tc, found, err := l.loadYAGA(ctx, client, owner, repo, ref)
		if err != nil || found {
			return tc, err
		}
		if l.org != nil {
			if c, err = l.org.LoadConfig(ctx, client, owner, repo, ref); err != nil {
				return TrustedConfig{}, fmt.Errorf("load %s from %s: %w", c.Path, c.Source, err)
			}
		}
	}
	if c.IsUndefined() {
		return TrustedConfig{Repo: l.fallback, Source: ConfigSource{Origin: OriginServer}}, nil
	}
	src := ConfigSource{Origin: OriginRepository, Source: c.Source, Path: c.Path}
	tc := TrustedConfig{Source: src}
	switch {
	case c.IsRemote:
		tc.Source.Origin = OriginRemote
	case c.Source != "" && !sameRepo(c.Source, owner, repo):
		tc.Source.Origin = OriginOrganization
	}
	if tc.Source.Origin != OriginOrganization {
		tc.RepoFile = ConfigPath
	}
	cfg, perr := config.ParseRepo(c.Path, c.Content)
	if perr != nil {
		tc.Problems = asProblems(c.Path, perr)
		return tc, nil
	}
	cfg.Source = c.Source + ":" + c.Path
	tc.Repo = cfg
	return tc, nil
}

// loadYAGA reads the repository's .yaga.toml, else its pyproject.toml with a [tool.yaga] table,
// at ref. found is false when neither is there.
func (l *ConfigLoader) loadYAGA(ctx context.Context, client *github.Client, owner, repo, ref string) (TrustedConfig, bool, error) {
	for _, path := range []string{YAGAPath, PyprojectPath} {
		data, found, err := readFile(ctx, client, owner, repo, path, ref)
		if err != nil {
			return TrustedConfig{}, false, fmt.Errorf("load %s from %s/%s@%s: %w", path, owner, repo, ref, err)
		}
		if !found || path == PyprojectPath && data != nil && !IsYAGAPyproject(data) {
			continue
		}
		source := owner + "/" + repo + "@" + ref
		tc := TrustedConfig{Source: ConfigSource{Origin: OriginRepository, Source: source, Path: path}, RepoFile: path}
		if data == nil {
			tc.Problems = config.Problems{{File: path, Message: fmt.Sprintf("the file exceeds %d bytes", config.MaxPolicyFileBytes)}}
			return tc, true, nil
		}
		cfg, probs := parseYAGA(path, data)
		if len(probs) > 0 {
			tc.Problems = probs
			return tc, true, nil
		}
		cfg.Source = source + ":" + path
		tc.Repo = cfg
		return tc, true, nil
	}
	return TrustedConfig{}, false, nil
}

// readFile reads one file at ref. A file too large for the contents API comes back found with
// nil data, so the caller reports it instead of failing the run.
func readFile(ctx context.Context, client *github.Client, owner, repo, path, ref string) ([]byte, bool, error) {
	fc, _, _, err := client.Repositories.GetContents(ctx, owner, repo, path, &github.RepositoryContentGetOptions{Ref: ref})
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fc == nil { // a directory of that name
		return nil, false, nil
	}
	if fc.GetSize() > config.MaxPolicyFileBytes {
		return nil, true, nil
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, false, fmt.Errorf("decode %s: %w", path, err)
	}
	return []byte(s), true, nil
}

// parseYAGA reads a YAGA policy file into the default configuration, the way `lensgate review`
// does: every other setting keeps its default.
func parseYAGA(path string, data []byte) (*config.Repo, config.Problems) {
	pol, err := config.ParseYAGATOML(path, data)
	if err != nil {
		return nil, locateTOML(path, data, asProblems(path, err))
	}
	cfg := config.DefaultRepo()
	cfg.Source, cfg.Policy, cfg.PolicyDefaulted = path, pol, false
	return cfg, nil
}

// sameRepo reports whether source ("owner/repo@ref") names owner/repo.
func sameRepo(source, owner, repo string) bool {
	want := owner + "/" + repo
	return source == want || len(source) > len(want) && source[:len(want)] == want && source[len(want)] == '@'
}

// asProblems keeps the structured problems of a parse error, or wraps any other error as one
// problem of the whole file.
func asProblems(path string, err error) config.Problems {
	var ps config.Problems
	if errors.As(err, &ps) && len(ps) > 0 {
		return ps
	}
	return config.Problems{{File: path, Message: err.Error()}}
}

// ValidateProposed checks a configuration file (.asdd.yml, .yaga.toml or pyproject.toml) as a
// pull request's head would have it. The result is reported, never applied.
func ValidateProposed(path string, data []byte) config.Problems {
	if path == YAGAPath || path == PyprojectPath {
		_, probs := parseYAGA(path, data)
		return probs
	}
	if _, err := config.ParseRepo(path, data); err != nil {
		return asProblems(path, err)
	}
	return nil
}
