package main

import (
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/config"
)

// loadSecrets adds the repository's own gitleaks files (.gitleaksignore, .gitleaks.toml) of the
// base revision to the configuration, as the App reads them from the base branch: never from
// the head, so a change cannot silence a finding about itself.
func (c *reviewCmd) loadSecrets(e *env, cfg *config.Repo) error {
	var problems []string
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{config.GitleaksIgnorePath, &cfg.Secrets.Ignore}, {config.GitleaksConfigPath, &cfg.Secrets.Config}} {
		data, ok, err := c.showAtBase(e, f.name)
		switch {
		case err != nil:
			return err
		case !ok:
		case len(data) > config.MaxGitleaksFileBytes:
			problems = append(problems, fmt.Sprintf("%s is larger than %d bytes and is not applied", f.name, config.MaxGitleaksFileBytes))
		default:
			*f.dst = data
		}
	}
	cfg.Secrets.Problems = strings.Join(problems, "; ")
	return nil
}
