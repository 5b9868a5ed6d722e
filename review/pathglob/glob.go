// Package pathglob matches repository paths against the globs of .asdd.yml (protected_paths,
// ignore_paths, spec_paths): "**/" is zero or more directories, "**" anything, "*" anything
// within one path segment and "?" one character other than '/'.
//
// Globs are translated to regular expressions, so matching is linear in the path length
// whatever the pattern (no backtracking blow-up on "**/**/**/…").
package pathglob

import (
	"regexp"
	"strings"
)

// Set is a compiled list of globs.
type Set struct {
	res []*regexp.Regexp
}

// Compile compiles globs. A glob that cannot be compiled matches nothing.
func Compile(globs []string) *Set {
	s := &Set{}
	for _, g := range globs {
		if re, err := regexp.Compile(translate(g)); err == nil {
			s.res = append(s.res, re)
		}
	}
	return s
}

// Match reports whether path matches one of the set's globs.
func (s *Set) Match(path string) bool {
	if s == nil {
		return false
	}
	for _, re := range s.res {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// Match reports whether path matches pattern.
func Match(pattern, path string) bool {
	return Compile([]string{pattern}).Match(path)
}

func translate(g string) string {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(g); {
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 3
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(`.*`)
			i += 2
		case g[i] == '*':
			b.WriteString(`[^/]*`)
			i++
		case g[i] == '?':
			b.WriteString(`[^/]`)
			i++
		default:
			j := i + 1
			for j < len(g) && g[j] != '*' && g[j] != '?' {
				j++
			}
			b.WriteString(regexp.QuoteMeta(g[i:j]))
			i = j
		}
	}
	b.WriteString(`$`)
	return b.String()
}
