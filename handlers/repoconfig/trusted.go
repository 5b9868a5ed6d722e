// Package repoconfig loads a repository's trusted configuration: the .asdd.yml (or yaga
// pyproject.toml) on the base branch, the organization's .github repository, or a remote: reference,
// never the pull request's own head.
package repoconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"
	yaml "go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/pull"
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
// (the base branch for pull requests), then its .yaga.toml, then its pyproject.toml
// [tool.yaga], then the owner's organisation repository's .asdd.yml, then the server default.
//
// An .asdd.yml may be a remote reference (remote:, path:, ref:), but only to the same owner's
// organisation repository: the installation token can read other repositories, and one
// repository's policy must never reveal or borrow another's. Every other reference is a policy
// problem of the key, and nothing is read. Each file's size is checked before its content is
// decoded or parsed.
type ConfigLoader struct {
	orgRepo  string // "" disables the organisation fallback and remote references
	fallback *config.Repo
	absent   OrgConfigAbsence
	now      func() time.Time
}

// NewConfigLoader builds a loader. orgRepo is the owner's fallback repository (".github"; empty
// disables it); fallback is the server default (config.DefaultRepo() when nil); absent keeps
// which owners have no organisation configuration (this process's memory when nil); now is
// its clock (time.Now when nil).
func NewConfigLoader(orgRepo string, fallback *config.Repo, absent OrgConfigAbsence, now func() time.Time) *ConfigLoader {
	if fallback == nil {
		fallback = config.DefaultRepo()
	}
	if absent == nil {
		absent = NewMemoryOrgConfigAbsence(maxOrgAbsences)
	}
	if now == nil {
		now = time.Now
	}
	return &ConfigLoader{orgRepo: orgRepo, fallback: fallback, absent: absent, now: now}
}

// OrgConfigAbsentTTL is how long the loader remembers that an owner's organisation repository
// has no .asdd.yml the installation can read. GitHub answers that read with a 404, which has
// no ETag to revalidate, so without the memory every review of such an owner would pay it
// again. An organisation configuration added meanwhile applies once this time has passed, or
// at once when the App receives the push to that repository's default branch (or the
// installation is given access to the repository).
const OrgConfigAbsentTTL = 5 * time.Minute

// maxOrgAbsences bounds the owners remembered in memory; beyond it the soonest to expire goes.
const maxOrgAbsences = 10000

// OrgConfigAbsence remembers, per installation and owner, until when the owner's organisation
// repository is known to hold no configuration the installation can read. The installation is
// part of the key: one installation may be refused the repository another can read, so one
// answer is never taken for another installation's, and never for another owner's. Owners
// come lower-cased (GitHub logins are case-insensitive). The durable queue's database keeps it
// for every replica (durable.OrgConfigAbsence); NewMemoryOrgConfigAbsence keeps it in a process.
type OrgConfigAbsence interface {
	// OrgConfigAbsent reports whether the absence is known at now.
	OrgConfigAbsent(ctx context.Context, installation int64, owner string, now time.Time) (bool, error)
	// RememberOrgConfigAbsent records the absence until then.
	RememberOrgConfigAbsent(ctx context.Context, installation int64, owner string, until time.Time) error
	// ForgetOrgConfigAbsent drops what is known of the owner: of every installation when
	// installation is 0.
	ForgetOrgConfigAbsent(ctx context.Context, installation int64, owner string) error
}

// memoryAbsence is OrgConfigAbsence in this process, bounded.
type memoryAbsence struct {
	limit int

	mu    sync.Mutex
	until map[orgKey]time.Time
}

type orgKey struct {
	installation int64
	owner        string
}

// NewMemoryOrgConfigAbsence keeps up to limit owners in this process.
func NewMemoryOrgConfigAbsence(limit int) OrgConfigAbsence {
	return &memoryAbsence{limit: max(limit, 1), until: map[orgKey]time.Time{}}
}

func (a *memoryAbsence) OrgConfigAbsent(_ context.Context, installation int64, owner string, now time.Time) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := orgKey{installation, owner}
	t, ok := a.until[k]
	if ok && !now.Before(t) {
		delete(a.until, k)
		return false, nil
	}
	return ok, nil
}

func (a *memoryAbsence) RememberOrgConfigAbsent(_ context.Context, installation int64, owner string, until time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := orgKey{installation, owner}
	if _, ok := a.until[k]; !ok && len(a.until) >= a.limit {
		var first orgKey
		found := false
		for o, t := range a.until {
			if !found || t.Before(a.until[first]) {
				first, found = o, true
			}
		}
		delete(a.until, first)
	}
	a.until[k] = until
	return nil
}

func (a *memoryAbsence) ForgetOrgConfigAbsent(_ context.Context, installation int64, owner string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if installation != 0 {
		delete(a.until, orgKey{installation, owner})
		return nil
	}
	for k := range a.until {
		if k.owner == owner {
			delete(a.until, k)
		}
	}
	return nil
}

// OrgConfigChanged makes the next load of the owner's repositories read the organisation
// configuration again (for every installation when installation is 0): a push to its default
// branch or new access to the repository may have added it.
func (l *ConfigLoader) OrgConfigChanged(ctx context.Context, installation int64, owner string) error {
	if err := l.absent.ForgetOrgConfigAbsent(ctx, installation, strings.ToLower(owner)); err != nil {
		return fmt.Errorf("forget the organisation configuration's absence for %s: %w", owner, err)
	}
	return nil
}

// orgConfigAbsent reports a known absence; a store that cannot answer says no (the file is read).
func (l *ConfigLoader) orgConfigAbsent(ctx context.Context, installation int64, owner string) bool {
	known, err := l.absent.OrgConfigAbsent(ctx, installation, strings.ToLower(owner), l.now())
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("organisation configuration's absence unknown; reading it")
		return false
	}
	return known
}

// IsOrgConfigRepo reports whether repo is the organisation configuration repository.
func (l *ConfigLoader) IsOrgConfigRepo(repo string) bool {
	return l.orgRepo != "" && strings.EqualFold(repo, l.orgRepo)
}

// Load reads the configuration of owner/repo at ref, with the token of installation. ref must
// be trusted (a base branch or the default branch), never a pull request head. An invalid file
// is not an error: it comes back with its Problems so the caller reports it instead of
// reviewing with defaults. The error is for GitHub failures only.
func (l *ConfigLoader) Load(ctx context.Context, client *github.Client, installation int64, owner, repo, ref string) (TrustedConfig, error) {
	// One listing of the root says which of the files exist, so a repository without them
	// pays no 404 per file; its ETag makes the next review's listing a 304.
	root, err := rootFiles(ctx, client, owner, repo, ref)
	if err != nil {
		return TrustedConfig{}, fmt.Errorf("list the root of %s/%s@%s: %w", owner, repo, ref, err)
	}
	tc, err := l.loadPolicy(ctx, client, installation, owner, repo, ref, root)
	if err != nil || tc.Repo == nil {
		return tc, err
	}
	return loadSecrets(ctx, client, owner, repo, ref, root, tc)
}

// loadPolicy reads the policy in order: the repository's .asdd.yml, its YAGA files, the
// organisation's .asdd.yml, the server default.
func (l *ConfigLoader) loadPolicy(ctx context.Context, client *github.Client, installation int64, owner, repo, ref string, root map[string]bool) (TrustedConfig, error) {
	if root[ConfigPath] {
		data, found, err := readFile(ctx, client, owner, repo, ConfigPath, ref)
		if err != nil {
			return TrustedConfig{}, fmt.Errorf("load %s from %s/%s@%s: %w", ConfigPath, owner, repo, ref, err)
		}
		if found {
			src := ConfigSource{Origin: OriginRepository, Source: owner + "/" + repo + "@" + ref, Path: ConfigPath}
			return l.loadASDD(ctx, client, owner, src, data, ConfigPath)
		}
	}
	// The YAGA files are read only when .asdd.yml is absent.
	tc, found, err := l.loadYAGA(ctx, client, owner, repo, ref, root)
	if err != nil || found {
		return tc, err
	}
	if l.orgRepo != "" && !strings.EqualFold(repo, l.orgRepo) && !l.orgConfigAbsent(ctx, installation, owner) {
		// No ref: GitHub reads the default branch, and a missing repository is a 404 like a
		// missing file, so the fallback costs one read, and none while its absence is known.
		data, found, err := readFile(ctx, client, owner, l.orgRepo, ConfigPath, "")
		if err != nil {
			return TrustedConfig{}, fmt.Errorf("load %s from %s/%s: %w", ConfigPath, owner, l.orgRepo, err)
		}
		if !found {
			if err := l.absent.RememberOrgConfigAbsent(ctx, installation, strings.ToLower(owner), l.now().Add(OrgConfigAbsentTTL)); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Msg("organisation configuration's absence not remembered; the next review reads it again")
			}
		}
		if found {
			src := ConfigSource{Origin: OriginOrganization, Source: owner + "/" + l.orgRepo, Path: ConfigPath}
			return l.loadASDD(ctx, client, owner, src, data, "")
		}
	}
	return TrustedConfig{Repo: l.fallback, Source: ConfigSource{Origin: OriginServer}}, nil
}

// loadASDD parses an .asdd.yml read from src (nil data: over the size cap), following a remote
// reference to the owner's organisation repository.
func (l *ConfigLoader) loadASDD(ctx context.Context, client *github.Client, owner string, src ConfigSource, data []byte, repoFile string) (TrustedConfig, error) {
	tc := TrustedConfig{Source: src, RepoFile: repoFile}
	if data == nil {
		tc.Problems = tooLarge(src.Path)
		return tc, nil
	}
	remote, probs := parseRemoteRef(src.Path, data)
	if len(probs) > 0 {
		tc.Problems = probs
		return tc, nil
	}
	if remote != nil {
		target, probs := l.checkRemote(src.Path, owner, remote)
		if len(probs) > 0 {
			tc.Problems = probs
			return tc, nil
		}
		rdata, found, err := readFile(ctx, client, owner, target.repo, target.path, target.ref)
		if err != nil {
			return TrustedConfig{}, fmt.Errorf("load %s from %s/%s: %w", target.path, owner, target.repo, err)
		}
		tc.Source = ConfigSource{Origin: OriginRemote, Source: owner + "/" + target.repo, Path: target.path}
		if target.ref != "" {
			tc.Source.Source += "@" + target.ref
		}
		switch {
		case !found:
			tc.Problems = config.Problems{{File: src.Path, Key: "remote",
				Message: fmt.Sprintf("the remote reference names %s in %s/%s, which does not exist", target.path, owner, target.repo),
				Hint:    "fix path: and ref:, or remove the reference"}}
			return tc, nil
		case rdata == nil:
			tc.Problems = tooLarge(target.path)
			return tc, nil
		}
		if r, _ := parseRemoteRef(target.path, rdata); r != nil {
			tc.Problems = config.Problems{{File: target.path, Key: "remote",
				Message: "a remote reference must name a configuration, not another reference"}}
			return tc, nil
		}
		data = rdata
	}
	cfg, perr := config.ParseRepo(tc.Source.Path, data)
	if perr != nil {
		tc.Problems = asProblems(tc.Source.Path, perr)
		return tc, nil
	}
	cfg.Source = tc.Source.Source + ":" + tc.Source.Path
	tc.Repo = cfg
	return tc, nil
}

func tooLarge(path string) config.Problems {
	return config.Problems{{File: path, Message: fmt.Sprintf("the file exceeds %d bytes", config.MaxPolicyFileBytes),
		Hint: "a configuration is a few kilobytes; remove what does not belong"}}
}

// remoteRef is a remote: reference as written.
type remoteRef struct {
	remote, path, ref string
	line              int
}

// parseRemoteRef reports whether an .asdd.yml is a remote reference: a mapping whose keys
// include remote. A reference takes only remote, path and ref, each a string.
func parseRemoteRef(file string, data []byte) (*remoteRef, config.Problems) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil // not a reference; the policy parser reports what is wrong
	}
	m := doc.Content[0]
	isRef := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "remote" {
			isRef = true
		}
	}
	if !isRef {
		return nil, nil
	}
	r := &remoteRef{}
	var probs config.Problems
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch k.Value {
		case "remote", "path", "ref":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				probs = append(probs, config.Problem{File: file, Line: v.Line, Column: v.Column, Key: k.Value, Message: k.Value + " must be a string"})
				continue
			}
		}
		switch k.Value {
		case "remote":
			r.remote, r.line = v.Value, k.Line
		case "path":
			r.path = v.Value
		case "ref":
			r.ref = v.Value
		default:
			probs = append(probs, config.Problem{File: file, Line: k.Line, Column: k.Column, Key: k.Value,
				Message: "a remote reference takes only remote, path and ref", Hint: "put the policy in the referenced file"})
		}
	}
	return r, probs
}

// remoteTarget is a remote reference that passed checkRemote.
type remoteTarget struct{ repo, path, ref string }

var (
	reOwnerName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	reRepoName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	rePathPart  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// checkRemote allows a remote reference only to the owner's organisation repository, with an
// owner, repository, path and ref that can only name a file there: anything else is a problem of
// the key, so no other repository is read and nothing of one is published.
func (l *ConfigLoader) checkRemote(file, owner string, r *remoteRef) (remoteTarget, config.Problems) {
	bad := func(key, msg string) (remoteTarget, config.Problems) {
		return remoteTarget{}, config.Problems{{File: file, Line: r.line, Key: key, Message: msg,
			Hint: "remote: may only name " + owner + "/" + l.orgRepo + ", the owner's organisation configuration repository"}}
	}
	if l.orgRepo == "" {
		return bad("remote", "remote references are disabled on this server")
	}
	o, name, ok := strings.Cut(r.remote, "/")
	switch {
	case !ok || !reOwnerName.MatchString(o) || !reRepoName.MatchString(name) || name == "." || name == "..":
		return bad("remote", "remote must be owner/repository")
	case !strings.EqualFold(o, owner) || !strings.EqualFold(name, l.orgRepo):
		return bad("remote", "remote may only name the same owner's "+l.orgRepo+" repository")
	}
	path := r.path
	if path == "" {
		path = ConfigPath
	}
	if !validRelPath(path) {
		return bad("path", "path must be a relative file path without . or .. segments")
	}
	if r.ref != "" && (!validRelPath(r.ref) || strings.HasPrefix(r.ref, "-") || strings.HasSuffix(r.ref, ".lock")) {
		return bad("ref", "ref must be a branch, tag or commit name")
	}
	return remoteTarget{repo: l.orgRepo, path: path, ref: r.ref}, nil
}

// validRelPath reports a slash-separated path of plain segments (no empty, . or .. segment).
func validRelPath(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || !rePathPart.MatchString(seg) {
			return false
		}
	}
	return true
}

// loadYAGA reads the repository's .yaga.toml, else its pyproject.toml with a [tool.yaga] table,
// at ref. found is false when neither is there.
func (l *ConfigLoader) loadYAGA(ctx context.Context, client *github.Client, owner, repo, ref string, root map[string]bool) (TrustedConfig, bool, error) {
	for _, path := range []string{YAGAPath, PyprojectPath} {
		if !root[path] {
			continue
		}
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
			tc.Problems = tooLarge(path)
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

// rootFiles lists the file names at the root of owner/repo at ref (empty for an empty
// repository or a missing ref).
func rootFiles(ctx context.Context, client *github.Client, owner, repo, ref string) (map[string]bool, error) {
	_, dir, _, err := client.Repositories.GetContents(ctx, owner, repo, "", &github.RepositoryContentGetOptions{Ref: ref})
	if pull.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(dir))
	for _, e := range dir {
		if e.GetType() == "file" {
			names[e.GetName()] = true
		}
	}
	return names, nil
}

// readFile reads one file at ref. A file too large for the contents API comes back found with
// nil data, so the caller reports it instead of failing the run.
func readFile(ctx context.Context, client *github.Client, owner, repo, path, ref string) ([]byte, bool, error) {
	fc, _, _, err := client.Repositories.GetContents(ctx, owner, repo, path, &github.RepositoryContentGetOptions{Ref: ref})
	if pull.IsNotFound(err) {
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
		return nil, asProblems(path, err)
	}
	cfg := config.DefaultRepo()
	cfg.Source, cfg.Policy, cfg.PolicyDefaulted = path, pol, false
	return cfg, nil
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

// ConfigSource says which file a repository's policy came from.
type ConfigSource struct {
	// Origin is "repository" (the base branch), "organization" (the owner's .github repository),
	// "remote" (a remote: reference) or "server" (the server default, no file found).
	Origin string
	// Source is "owner/repo@ref" as the loader reports it; empty for the server default.
	Source string
	// Path is the file path inside Source.
	Path string
}

// ProposedConfig is a configuration file changed by the pull request under review.
type ProposedConfig struct {
	Path     string
	HeadSHA  string
	Problems config.Problems // empty when the new file is valid
	// Err is set when the file could not be read at the head (it is then not validated).
	Err error
}

// loadSecrets adds the repository's own gitleaks files (.gitleaksignore, .gitleaks.toml) of ref
// to the configuration, whichever file the policy came from: they are the repository's
// baseline of known findings. Only files the root listing shows are read. The configuration is
// copied first: the server default is shared by every repository.
func loadSecrets(ctx context.Context, client *github.Client, owner, repo, ref string, root map[string]bool, tc TrustedConfig) (TrustedConfig, error) {
	if !root[config.GitleaksIgnorePath] && !root[config.GitleaksConfigPath] {
		return tc, nil
	}
	cfg := *tc.Repo
	var problems []string
	for _, f := range []struct {
		path string
		dst  *[]byte
	}{{config.GitleaksIgnorePath, &cfg.Secrets.Ignore}, {config.GitleaksConfigPath, &cfg.Secrets.Config}} {
		if !root[f.path] {
			continue
		}
		data, found, err := readFile(ctx, client, owner, repo, f.path, ref)
		switch {
		case err != nil:
			return TrustedConfig{}, fmt.Errorf("load %s from %s/%s@%s: %w", f.path, owner, repo, ref, err)
		case found && (data == nil || len(data) > config.MaxGitleaksFileBytes):
			problems = append(problems, fmt.Sprintf("%s is larger than %d bytes and is not applied", f.path, config.MaxGitleaksFileBytes))
		case found:
			*f.dst = data
		}
	}
	cfg.Secrets.Problems = strings.Join(problems, "; ")
	tc.Repo = &cfg
	return tc, nil
}
