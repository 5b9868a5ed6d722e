package builtin

import (
	"slices"
	"strings"
	"testing"
)

// gateLines are lines at the edges of the run gates: values of exactly 9, 10, 11 and 12
// characters after a keyword, every operator of generic-api-key, characters that fold to a
// keyword's or a value's letters (ſ, the Kelvin sign), a keyword at the end of a line, a value
// on the next line, invalid UTF-8, and runs that only come before the keyword.
var gateLines = []string{
	"api_key=123456789", "api_key=1234567890", "api_key=Zx81kQm02Lp", "api_key=Zx81kQm02LpW", "api_key=Zx81kQm02L",
	"KEY:=Zx81kQm02LpWvB7rT4cN", "x.key ?= 'Zx81kQm02LpWvB7rT4cN'", "secret => \"Zx81kQm02LpWvB7rT4cN\"",
	"token || Zx81kQm02LpWvB7rT4cN", "auth, Zx81kQm02LpWvB7rT4cN", "passwd:::=Zx81kQm02LpWvB7rT4cN", "ToKeN>Zx81kQm02LpWvB7rT4cN",
	"credential : `Zx81kQm02LpWvB7rT4cN`", "creds\t=\t\"Zx81kQm02LpWvB7rT4cN\";", "access-token = Zx81kQm02LpWvB7rT4cN\\n",
	"key = Zx81kQm02\u017fLpWvB7rT4cN", "key = Zx81kQm\u212a02LpWvB7rT4cN", "\u017fecret = Zx81kQm02LpWvB7rT4cN", "tO\u212aen: Zx81kQm02LpWvB7rT4cN",
	"token = Zx81k\xffQm02LpWvB7rT4cN", "token = \xffZx81kQm02LpWvB7rT4cN", "\xff key = Zx81kQm02LpWvB7rT4cN",
	"x := key", "return secret", "token =", "API_KEY = \\", "key:", "  Zx81kQm02LpWvB7rT4cN", "  'Zx81kQm02LpWvB7rT4cN'",
	"Zx81kQm02LpWvB7rT4cN_key = 12", "s.store.Put(ctx, key, value)", "log.Str(\"key\", key).Int(\"size\", n)",
	"keykeykeykey=abc", "key=key=key=key=key=Zx81kQm02LpW", "api.key.value.Zx81kQm02LpWvB7rT4cN=1",
	"s.Zx81kQm02LpWvB7rT4cNabc", "s.Zx81kQm02LpWvB7rT4cNabcd", "hvs." + strings.Repeat("Zx81kQm02LpWvB7rT4cN", 5),
	"eyJhbGciOiJIUzI1NiIsI.eyJzdWIiOiIxMjM0NTY3.c2lnbmF0dXJlX3ZhbHVl", "eyJhbGciOiJIUzI1NiIs.eyJzdWIiOiIxMjM0NTY3.c2lnbmF0dXJlX3ZhbHVl",
	strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2", 1),
	strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV", 1),
}

// TestRunGates shows the gates derived from the rules' expressions: generic-api-key's is the
// value its expression needs after a keyword.
func TestRunGates(t *testing.T) {
	rules := mustRules(t)
	gates := map[string]*runGate{}
	for _, b := range rules.split.bound {
		gates[b.d.Config.OrderedRules[0]] = b.gate
	}
	for _, g := range rules.split.gated {
		gates[g.d.Config.OrderedRules[0]] = g.gate
	}
	for id, want := range map[string]int{"generic-api-key": 10, "jwt": 38, "vault-service-token": 24, "private-key-body": 64} {
		if g := gates[id]; g == nil || g.n != want {
			t.Errorf("%s: gate %+v, want a run of %d", id, g, want)
		}
	}
	g := gates["generic-api-key"]
	for _, s := range []string{"Zx81kQm0.=", "abc+/def01", "Zx81\u017fQm0_-", "Zx81\u212aQm0_-"} {
		if !g.passes(s) {
			t.Errorf("generic-api-key's gate refuses %q", s)
		}
	}
	for _, s := range []string{"Zx81kQm0.", "Zx81k\xffQm0.=", "Zx81k Qm0.=", "Zx81k\"Qm0.="} {
		if g.passes(s) {
			t.Errorf("generic-api-key's gate passes %q", s)
		}
	}
}

// checkGates fails when a gate drops a line that starts a match of its rule in text, in a text
// gitleaks runs the rule on (one of its keywords is in the lower-cased text).
func checkGates(t *testing.T, s *SecretRules, text string) {
	t.Helper()
	sd := s.split
	lower := strings.ToLower(text)
	for i, keys := range sd.keywordLines(text) {
		b := sd.bound[i]
		id := b.d.Config.OrderedRules[0]
		r := b.d.Config.Rules[id]
		if b.span < 0 || !slices.ContainsFunc(r.Keywords, func(k string) bool { return strings.Contains(lower, strings.ToLower(k)) }) {
			continue
		}
		kept := map[int]bool{}
		for _, k := range keys {
			kept[k.line] = true
		}
		for _, m := range r.Regex.FindAllStringIndex(text, -1) {
			if l := strings.Count(text[:m[0]], "\n"); !kept[l] {
				t.Fatalf("%s's gate drops line %d of %q, where %q matches", id, l, text, text[m[0]:m[1]])
			}
		}
	}
	for _, g := range sd.gated {
		if g.gate.passes(text) != g.gate.passesRunes(text) {
			t.Fatalf("%s's gate counting bytes and counting characters differ on %q", g.d.Config.OrderedRules[0], text)
		}
		re := g.d.Config.Rules[g.d.Config.OrderedRules[0]].Regex
		if re.MatchString(text) && !g.gate.passes(text) {
			t.Fatalf("%s's gate refuses %q, which it matches", g.d.Config.OrderedRules[0], text)
		}
	}
}

// TestRunGatesKeepMatches checks, on the edge lines and on every line of this repository, that a
// gate never drops a line where its rule's expression matches.
func TestRunGatesKeepMatches(t *testing.T) {
	rules := mustRules(t)
	for _, l := range append(append(append([]string(nil), gateLines...), trickyLines...), repoLines(t)...) {
		checkGates(t, rules, l)
		checkGates(t, rules, strings.ToUpper(l))
		checkGates(t, rules, "x\n"+l+"\n"+l)
	}
	for _, a := range gateLines {
		for _, b := range gateLines {
			checkGates(t, rules, a+"\n"+b)
		}
	}
	body := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2\n", 3)
	for i := range len(body) {
		checkGates(t, rules, body[:i]+"\xff"+body[i:])
		checkGates(t, rules, body[:i]+"é"+body[i+1:])
	}
}

// FuzzRunGates checks the gates on any text.
func FuzzRunGates(f *testing.F) {
	for _, l := range gateLines {
		f.Add(l)
	}
	rules := mustRules(f)
	f.Fuzz(func(t *testing.T, text string) {
		checkGates(t, rules, text)
	})
}
