package builtin

import (
	"strings"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/report"
)

// manyStopWords is the size from which an allowlist's stop words are kept as a stopWords
// instead of gitleaks' Aho-Corasick trie. gitleaks' trie takes 2 KiB a state: for
// generic-api-key's some 1,450 stop words that is 12 MiB of a process's 15 MiB of rules.
const manyStopWords = 100

// stopWords are an allowlist's stop words (lower-cased), indexed by their first two bytes.
type stopWords struct {
	short  []string // words of one byte
	byPair map[[2]byte][]string
}

func newStopWords(words []string) *stopWords {
	sw := &stopWords{byPair: map[[2]byte][]string{}}
	for _, w := range words {
		switch {
		case w == "":
		case len(w) == 1:
			sw.short = append(sw.short, w)
		default:
			k := [2]byte{w[0], w[1]}
			sw.byPair[k] = append(sw.byPair[k], w)
		}
	}
	return sw
}

// in says whether secret, lower-cased, contains one of the words: gitleaks' ContainsStopWord.
func (sw *stopWords) in(secret string) bool {
	if secret == "" {
		return false
	}
	s := strings.ToLower(secret)
	for _, w := range sw.short {
		if strings.Contains(s, w) {
			return true
		}
	}
	for i := 0; i+1 < len(s); i++ {
		for _, w := range sw.byPair[[2]byte{s[i], s[i+1]}] {
			if strings.HasPrefix(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// compactStopWords takes the stop words out of each of cfg's rule allowlists that holds many
// and allows on any one condition (gitleaks' "or"): the allowlist, rebuilt without them, allows
// what it did but for the stop words, which splitDetector then checks on the findings of the
// allowlist's rule (allowedByStopWords). The result is the same; the trie is gone. It returns
// the stop words taken out, by rule.
func compactStopWords(cfg *gitleaks.Config) map[string][]*stopWords {
	taken := map[string][]*stopWords{}
	rules := make(map[string]gitleaks.Rule, len(cfg.Rules))
	for id, r := range cfg.Rules {
		var als []*gitleaks.Allowlist
		for _, a := range r.Allowlists {
			if len(a.StopWords) < manyStopWords || a.MatchCondition != gitleaks.AllowlistMatchOr {
				als = append(als, a)
				continue
			}
			taken[id] = append(taken[id], newStopWords(a.StopWords))
			// Not validated: gitleaks then matches the lists one expression at a time,
			// with the same result.
			als = append(als, &gitleaks.Allowlist{
				Description: a.Description, MatchCondition: a.MatchCondition, Commits: a.Commits,
				Paths: a.Paths, RegexTarget: a.RegexTarget, Regexes: a.Regexes,
			})
		}
		r.Allowlists = als
		rules[id] = r
	}
	cfg.Rules = rules
	return taken
}

// allowedByStopWords drops the findings that stop words taken out of their rule's allowlists
// allow.
func allowedByStopWords(fs []report.Finding, taken map[string][]*stopWords) []report.Finding {
	if len(taken) == 0 {
		return fs
	}
	out := fs[:0]
	for _, f := range fs {
		allowed := false
		for _, sw := range taken[f.RuleID] {
			allowed = allowed || sw.in(f.Secret)
		}
		if !allowed {
			out = append(out, f)
		}
	}
	return out
}
