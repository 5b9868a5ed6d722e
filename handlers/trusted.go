package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/appconfig"

	"github.com/lensgate/lensgate/config"
)

// ConfigPath is the repository configuration file lensgate reads.
const ConfigPath = ".asdd.yml"

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
}

// ConfigLoader reads .asdd.yml from a trusted ref with go-githubapp's appconfig loader: the
// repository at the given ref (the base branch for pull requests), then a remote: reference,
// then the owner's organisation repository, then the server default.
type ConfigLoader struct {
	loader   *appconfig.Loader
	orgRepo  string
	fallback *config.Repo
}

// NewConfigLoader builds a loader. orgRepo is the owner's fallback repository (".github"; empty
// disables it); fallback is the server default (config.DefaultRepo() when nil).
func NewConfigLoader(orgRepo string, fallback *config.Repo) *ConfigLoader {
	if fallback == nil {
		fallback = config.DefaultRepo()
	}
	return &ConfigLoader{
		loader:   appconfig.NewLoader([]string{ConfigPath}, appconfig.WithOwnerDefault(orgRepo, []string{ConfigPath})),
		orgRepo:  orgRepo,
		fallback: fallback,
	}
}

// Load reads the configuration of owner/repo at ref. ref must be trusted (a base branch or the
// default branch), never a pull request head. An invalid file is not an error: it comes back
// with its Problems so the caller reports it instead of reviewing with defaults. The error is
// for GitHub failures only.
func (l *ConfigLoader) Load(ctx context.Context, client *github.Client, owner, repo, ref string) (TrustedConfig, error) {
	c, err := l.loader.LoadConfig(ctx, client, owner, repo, ref)
	if err != nil {
		return TrustedConfig{}, fmt.Errorf("load %s from %s: %w", c.Path, c.Source, err)
	}
	if c.IsUndefined() {
		return TrustedConfig{Repo: l.fallback, Source: ConfigSource{Origin: OriginServer}}, nil
	}
	src := ConfigSource{Origin: OriginRepository, Source: c.Source, Path: c.Path}
	switch {
	case c.IsRemote:
		src.Origin = OriginRemote
	case c.Source != "" && !sameRepo(c.Source, owner, repo):
		src.Origin = OriginOrganization
	}
	cfg, perr := config.ParseRepo(c.Path, c.Content)
	if perr != nil {
		return TrustedConfig{Source: src, Problems: asProblems(c.Path, perr)}, nil
	}
	cfg.Source = c.Source + ":" + c.Path
	return TrustedConfig{Repo: cfg, Source: src}, nil
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

// ValidateProposed checks the configuration file as a pull request's head would have it. The
// result is reported, never applied.
func ValidateProposed(path string, data []byte) config.Problems {
	if _, err := config.ParseRepo(path, data); err != nil {
		return asProblems(path, err)
	}
	return nil
}
