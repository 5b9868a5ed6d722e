package pull

import (
	"context"

	"github.com/google/go-github/v62/github"
)

// Permission reads a user's permission on the repository.
func (f Fetcher) Permission(ctx context.Context, c *github.Client, owner, repo, login string) (*github.RepositoryPermissionLevel, error) {
	var level *github.RepositoryPermissionLevel
	err := f.Do(ctx, "get permission of "+login, func(ctx context.Context) error {
		var err error
		level, _, err = c.Repositories.GetPermissionLevel(ctx, owner, repo, login)
		return err
	})
	return level, err
}

// CanWrite reports whether a permission lets its user push, and so command the App.
func CanWrite(p *github.RepositoryPermissionLevel) bool {
	switch p.GetPermission() {
	case "admin", "maintain", "write":
		return true
	}
	return false
}
