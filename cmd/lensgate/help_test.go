package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// commandPaths walks the kong model and returns every command (as its argument path) with its
// node, so that a subcommand added later is covered without touching this file.
func commandPaths(t *testing.T) map[string]*kong.Node {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Name("lensgate"), kong.Vars{"version": version})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*kong.Node{}
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		out[strings.Join(path, " ")] = n
		for _, ch := range n.Children {
			if ch.Type == kong.CommandNode {
				walk(ch, append(append([]string(nil), path...), ch.Name))
			}
		}
	}
	walk(parser.Model.Node, nil)
	return out
}

func TestEveryCommandAndFlagHasHelp(t *testing.T) {
	cmds := commandPaths(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in the model", len(cmds))
	}
	for path, n := range cmds {
		if path != "" && strings.TrimSpace(n.Help) == "" {
			t.Errorf("command %q has no help text", path)
		}
		for _, f := range n.Flags {
			if f.Hidden {
				continue
			}
			if strings.TrimSpace(f.Help) == "" {
				t.Errorf("lensgate %s --%s has no help text", path, f.Name)
			}
		}
		for _, p := range n.Positional {
			if strings.TrimSpace(p.Help) == "" {
				t.Errorf("lensgate %s <%s> has no help text", path, p.Name)
			}
		}
	}
}

// TestHelpOutput runs `lensgate [CMD...] --help` for every command and checks that the text
// names each subcommand and each flag with its help, and that help exits 0 on stdout.
func TestHelpOutput(t *testing.T) {
	for path, n := range commandPaths(t) {
		t.Run("lensgate "+path, func(t *testing.T) {
			args := append(strings.Fields(path), "--help")
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, &out, &errb); code != exitOK {
				t.Fatalf("exit %d; stderr %q", code, errb.String())
			}
			if errb.Len() != 0 {
				t.Errorf("help wrote to stderr: %q", errb.String())
			}
			text := out.String()
			if !strings.Contains(text, "Usage: lensgate "+path) {
				t.Errorf("no usage line for %q:\n%s", path, text)
			}
			// A group lists every command under it with its help: a nested group either by its
			// own summary or by each of its leaves.
			flat := squash(text)
			for _, ch := range n.Children {
				if ch.Type != kong.CommandNode || ch.Hidden {
					continue
				}
				if strings.Contains(flat, ch.Name) && strings.Contains(flat, firstWords(ch.Help)) {
					continue
				}
				for _, leaf := range leaves(ch, []string{ch.Name}) {
					if !strings.Contains(flat, leaf.path) || !strings.Contains(flat, firstWords(leaf.node.Help)) {
						t.Errorf("help lists neither %q (%q) nor %q (%q):\n%s", ch.Name, ch.Help, leaf.path, leaf.node.Help, text)
					}
				}
			}
			// Leaf commands show their own flags; a flag's help must be shown with it.
			if n.Leaf() {
				for _, f := range n.Flags {
					if f.Hidden {
						continue
					}
					if !strings.Contains(text, "--"+f.Name) {
						t.Errorf("help does not show --%s:\n%s", f.Name, text)
					}
					if !strings.Contains(squash(text), firstWords(f.Help)) {
						t.Errorf("help does not show the text of --%s (%q):\n%s", f.Name, f.Help, text)
					}
					for _, env := range f.Envs {
						if !strings.Contains(text, "$"+env) {
							t.Errorf("help does not name --%s's environment variable %s", f.Name, env)
						}
					}
				}
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.TrimSpace(out.String()) != version {
		t.Errorf("--version printed %q, want %q", out.String(), version)
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "frobnicate"},
		{[]string{"setup", "manifest", "--no-such-flag"}, "--no-such-flag"},
		{[]string{"serve", "--role", "primary"}, "primary"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errb.String())
		}
	}
}

// firstWords is the start of a help text, short enough not to be wrapped by kong.
func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

// squash joins wrapped help lines so a phrase split over two lines still matches.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

type leafCmd struct {
	path string
	node *kong.Node
}

// leaves lists the runnable commands below n with their paths relative to n.
func leaves(n *kong.Node, prefix []string) []leafCmd {
	var out []leafCmd
	for _, ch := range n.Children {
		if ch.Type != kong.CommandNode || ch.Hidden {
			continue
		}
		p := append(append([]string(nil), prefix...), ch.Name)
		if ch.Leaf() {
			out = append(out, leafCmd{strings.Join(p, " "), ch})
		} else {
			out = append(out, leaves(ch, p)...)
		}
	}
	return out
}

// documentedCommands returns the lensgate command lines in the code blocks (fenced or indented)
// of a Markdown file:
// "$ " prompts, VAR=value prefixes, trailing comments and redirections dropped, continuation
// lines joined.
func documentedCommands(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	lines := strings.Split(string(data), "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && !strings.HasPrefix(lines[i], "    ") {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		line = strings.TrimPrefix(line, "$ ")
		f := strings.Fields(line)
		for len(f) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(f[0]) {
			f = f[1:]
		}
		if len(f) < 2 || f[0] != "lensgate" {
			continue
		}
		var args []string
		for _, a := range f[1:] {
			if a == "#" || a == ">" || a == "|" || a == "&&" {
				break
			}
			args = append(args, a)
		}
		out = append(out, args)
	}
	return out
}

// TestDocumentedCommandsParse: every lensgate command line in the operator docs uses commands
// and flags that exist, with acceptable values.
func TestDocumentedCommandsParse(t *testing.T) {
	docs := []string{"docs/deploy.md", "docs/keys.md", "docs/troubleshooting.md"}
	abs := make([]string, len(docs))
	for i, d := range docs {
		p, err := filepath.Abs(filepath.Join("..", "..", d))
		if err != nil {
			t.Fatal(err)
		}
		abs[i] = p
	}
	// The documents' commands run from the repository root.
	t.Chdir(filepath.Join("..", ".."))
	n := 0
	for i, p := range abs {
		for _, args := range documentedCommands(t, p) {
			n++
			var c cli
			parser, err := kong.New(&c, kong.Name("lensgate"), kong.Vars{"version": version},
				kong.Exit(func(int) { t.Fatalf("%s: lensgate %v exits while parsing", docs[i], args) }))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parser.Parse(args); err != nil {
				t.Errorf("%s: lensgate %s: %v", docs[i], strings.Join(args, " "), err)
			}
		}
	}
	if n < 8 {
		t.Errorf("found only %d command lines in %v", n, docs)
	}
}
