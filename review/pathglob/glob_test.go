package pathglob

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{".github/**", ".github/workflows/ci.yml", true},
		{".github/**", ".github", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{".github/**", "x/.github/a", false},
		{"**/auth/**", "auth/login.go", true},
		{"**/auth/**", "svc/auth/login.go", true},
		{"**/auth/**", "svc/oauth/login.go", false},
		{"**/*requirements*.txt", "requirements.txt", true},
		{"**/*requirements*.txt", "py/dev-requirements-lock.txt", true},
		{"docs/specs/*.md", "docs/specs/a.md", true},
		{"docs/specs/*.md", "docs/specs/sub/a.md", false},
		{"STANDARD.md", "STANDARD.md", true},
		{"STANDARD.md", "docs/STANDARD.md", false},
		{"**/testdata/**", "review/runtime/builtin/testdata/key.diff", true},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"**", "anything/at/all", true},
		{"**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/x", "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/y", false},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

func TestSet(t *testing.T) {
	s := Compile([]string{"docs/**", "**/testdata/**"})
	if !s.Match("docs/a.md") || !s.Match("x/testdata/y") || s.Match("main.go") {
		t.Fatal("set matching is wrong")
	}
	var nilSet *Set
	if nilSet.Match("a") {
		t.Fatal("nil set matched")
	}
}
