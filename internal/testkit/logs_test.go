package testkit

import "testing"

func TestDuplicateKey(t *testing.T) {
	for line, want := range map[string]string{
		`{"a":1,"b":{"a":2},"c":[1,2]}`: "",
		`{"a":1,"b":2,"a":3}`:           "a",
		`{"msg":"x","msg":"y"}`:         "msg",
		`not json`:                      "",
		`[1,2]`:                         "",
		``:                              "",
		`{"a":1,`:                       "",
	} {
		if got := DuplicateKey(line); got != want {
			t.Errorf("DuplicateKey(%q) = %q, want %q", line, got, want)
		}
	}
}
