package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// yagaCase is one entry of testdata/yaga/cases/cases.json (see testdata/yaga/README.md for the
// origin and licence of these vectors).
type yagaCase struct {
	Case string   `json:"case"`
	Argv []string `json:"argv"`
	Exit int      `json:"exit"`
	Note string   `json:"note"`
}

// TestYAGAConformance runs every golden case: its argv "yaga gate agent-review policy SUB ..." is
// run as "lensgate policy SUB ..." in the case directory, and the exit code, stdout and stderr
// must equal the golden files (with <PATH>/ replaced by the case directory).
func TestYAGAConformance(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("testdata", "yaga", "cases"))
	if err != nil {
		t.Fatal(err)
	}
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []yagaCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	// Every case directory must be in the manifest, so none is silently skipped.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	var listed []string
	for _, c := range cases {
		listed = append(listed, c.Case)
	}
	slices.Sort(listed)
	if !slices.Equal(dirs, listed) {
		t.Fatalf("case directories %v differ from the manifest %v", dirs, listed)
	}
	if len(cases) < 59 {
		t.Fatalf("only %d cases", len(cases))
	}

	for _, c := range cases {
		t.Run(c.Case, func(t *testing.T) {
			dir := filepath.Join(root, c.Case)
			want := func(name string) string {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return strings.ReplaceAll(string(b), "<PATH>/", dir+"/")
			}
			wantExit, err := strconv.Atoi(strings.TrimSpace(want("expected.exit")))
			if err != nil || wantExit != c.Exit {
				t.Fatalf("expected.exit %q disagrees with the manifest %d", want("expected.exit"), c.Exit)
			}
			if !slices.Equal(c.Argv[:4], []string{"yaga", "gate", "agent-review", "policy"}) {
				t.Fatalf("unexpected argv %q", c.Argv)
			}
			args := append([]string{"policy"}, c.Argv[4:]...)
			t.Chdir(dir)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			if code != wantExit {
				t.Errorf("exit %d, want %d; stderr: %s", code, wantExit, stderr.String())
			}
			wantOut, wantErr := want("expected.stdout"), want("expected.stderr")
			format := flagValue(args, "--format")
			if format == "json" && wantOut != "" {
				assertJSONEqual(t, stdout.String(), wantOut)
			}
			if stdout.String() != wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), wantOut)
			}
			if wantExit == 2 {
				if stdout.Len() != 0 {
					t.Errorf("stdout must be empty on exit 2")
				}
				if format == "json" {
					assertErrorKind(t, stderr.String(), wantErr)
				}
			}
			if stderr.String() != wantErr {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), wantErr)
			}
		})
	}
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return strings.ToLower(args[i+1])
		}
	}
	return "text"
}

func assertJSONEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("JSON differs:\n%s\nwant:\n%s", gb, wb)
	}
}

func assertErrorKind(t *testing.T, got, want string) {
	t.Helper()
	type doc struct {
		SchemaVersion int `json:"schema_version"`
		Error         struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var g, w doc
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("stderr is not a JSON error document: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if g.SchemaVersion != 1 || g.Error.Kind != w.Error.Kind {
		t.Errorf("error document %+v, want kind %q", g, w.Error.Kind)
	}
}
