// Package eval measures how well lensgate's review finds known defects. It runs the review
// pipeline offline over a corpus of pull requests with golden findings (each a local git
// repository with base and head revisions, or a self-contained fixture built into one), matches
// what the lenses report against the golden findings by path and line window, optionally
// confirmed by a model judge, and reports recall, precision, F1, comments per pull request,
// tokens, cost and wall time per lens and overall. It also imports the golden comments of the
// public Martian code-review benchmark.
package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate/review"
)

// ManifestVersion is the corpus manifest version this package reads.
const ManifestVersion = 1

// maxManifestBytes bounds a manifest file.
const maxManifestBytes = 16 << 20

// Corpus is a set of evaluation cases, read from a YAML (or JSON) manifest.
type Corpus struct {
	Version int `yaml:"version" json:"version"`
	// Name labels the corpus in reports.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Config is an .asdd.yml (or YAGA policy file) every case is reviewed with, unless the
	// case names its own; relative to the manifest. Without either, a case is reviewed with the
	// configuration of its base revision, as lensgate review does.
	Config string `yaml:"config,omitempty" json:"config,omitempty"`
	Cases  []Case `yaml:"cases" json:"cases"`

	// dir is the manifest's directory; relative paths in the manifest are resolved against it.
	dir string
}

// Case is one pull request: where its change is, and the defects it is known to have.
type Case struct {
	ID    string `yaml:"id" json:"id"`
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	// Repo, Base and Head name the change in a local git repository (Repo relative to the
	// manifest). MergeBase reviews the change from the merge base of Base and Head, as a pull
	// request's diff on GitHub does.
	Repo      string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Base      string `yaml:"base,omitempty" json:"base,omitempty"`
	Head      string `yaml:"head,omitempty" json:"head,omitempty"`
	MergeBase bool   `yaml:"merge_base,omitempty" json:"merge_base,omitempty"`
	// Fixture is instead a directory holding the files of the base revision under base/ and the
	// change as change.patch; it is built into a temporary git repository.
	Fixture string `yaml:"fixture,omitempty" json:"fixture,omitempty"`
	// Config overrides the corpus's configuration for this case.
	Config string `yaml:"config,omitempty" json:"config,omitempty"`
	// Golden are the known defects. A case without any is a clean pull request: everything
	// reported on it is a false positive.
	Golden     []Golden    `yaml:"golden" json:"golden"`
	Provenance *Provenance `yaml:"provenance,omitempty" json:"provenance,omitempty"`
}

// Golden is one known defect of a case.
type Golden struct {
	// Path is the file of the defect on the head side; empty when only its description is
	// known (such a finding can only be matched by a model judge).
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// StartLine and EndLine are the defect's lines in the head version of Path (EndLine
	// defaults to StartLine; both 0: anywhere in the file).
	StartLine int `yaml:"start_line,omitempty" json:"start_line,omitempty"`
	EndLine   int `yaml:"end_line,omitempty" json:"end_line,omitempty"`
	// Description says what is wrong; the judge compares it with a finding's text.
	Description string `yaml:"description" json:"description"`
	// Severity is on lensgate's scale: critical, high, medium, low or info.
	Severity review.Severity `yaml:"severity" json:"severity"`
	// Lens, when set, is the lens expected to find the defect: the defect then counts only
	// towards that lens's recall. Empty: towards every lens's.
	Lens string `yaml:"lens,omitempty" json:"lens,omitempty"`
}

// Located reports whether the golden finding has a path to match findings against.
func (g Golden) Located() bool { return g.Path != "" }

// Provenance says where a case comes from and under which licence.
type Provenance struct {
	Repository string `yaml:"repository" json:"repository"`
	Commit     string `yaml:"commit,omitempty" json:"commit,omitempty"`
	URL        string `yaml:"url,omitempty" json:"url,omitempty"`
	License    string `yaml:"license" json:"license"`
	// Note says how the case was made from the source (for example, the reverse of a fix).
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
}

// Load reads a corpus manifest and checks it; relative paths in it are resolved against the
// manifest's directory.
func Load(file string) (*Corpus, error) {
	data, err := readBounded(file, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("read the corpus manifest: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	abs, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", file, err)
	}
	c.dir = abs
	return c, nil
}

// Parse reads a manifest (YAML, of which JSON is a subset). Unknown keys are errors, so a
// misspelt field is not silently ignored.
func Parse(data []byte) (*Corpus, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Corpus
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("corpus manifest: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Corpus) validate() error {
	if c.Version != ManifestVersion {
		return fmt.Errorf("corpus manifest version %d: this lensgate reads version %d", c.Version, ManifestVersion)
	}
	if len(c.Cases) == 0 {
		return errors.New("corpus manifest has no cases")
	}
	var problems []string
	seen := map[string]bool{}
	for i := range c.Cases {
		k := &c.Cases[i]
		where := fmt.Sprintf("cases[%d] (%s)", i, k.ID)
		if k.ID == "" {
			problems = append(problems, fmt.Sprintf("cases[%d] has no id", i))
		} else if seen[k.ID] {
			problems = append(problems, where+": the id is used twice")
		}
		seen[k.ID] = true
		problems = append(problems, k.validate(where)...)
	}
	if len(problems) > 0 {
		return errors.New("corpus manifest: " + strings.Join(problems, "; "))
	}
	return nil
}

func (k *Case) validate(where string) []string {
	var problems []string
	switch {
	case k.Fixture != "" && (k.Repo != "" || k.Base != "" || k.Head != ""):
		problems = append(problems, where+": give either fixture or repo with base and head, not both")
	case k.Fixture == "" && (k.Repo == "" || k.Base == "" || k.Head == ""):
		problems = append(problems, where+": needs a fixture, or repo, base and head")
	case k.MergeBase && k.Fixture != "":
		problems = append(problems, where+": merge_base applies to repo cases only")
	}
	for j := range k.Golden {
		g := &k.Golden[j]
		gw := fmt.Sprintf("%s golden[%d]", where, j)
		if g.EndLine == 0 {
			g.EndLine = g.StartLine
		}
		if g.Path != "" {
			g.Path = cleanPath(g.Path)
		}
		switch {
		case strings.TrimSpace(g.Description) == "":
			problems = append(problems, gw+": has no description")
		case g.StartLine < 0 || g.EndLine < g.StartLine:
			problems = append(problems, fmt.Sprintf("%s: lines %d-%d are not a range", gw, g.StartLine, g.EndLine))
		case g.StartLine > 0 && g.Path == "":
			problems = append(problems, gw+": has lines but no path")
		case g.Severity.Rank() < 0:
			problems = append(problems, fmt.Sprintf("%s: severity %q is not one of critical, high, medium, low, info", gw, g.Severity))
		}
	}
	if p := k.Provenance; p != nil && (p.Repository == "" || p.License == "") {
		problems = append(problems, where+": provenance needs a repository and a license")
	}
	return problems
}

// Dir is the directory relative paths of the manifest are resolved against.
func (c *Corpus) Dir() string { return c.dir }

// resolve makes a manifest path absolute.
func (c *Corpus) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, filepath.FromSlash(p))
}

// cleanPath puts a repository path in the form findings use: slash-separated, no leading "./"
// or "/".
func cleanPath(p string) string {
	p = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	return strings.TrimLeft(strings.TrimPrefix(p, "./"), "/")
}

// readBounded reads at most limit bytes of a file and fails when it holds more.
func readBounded(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", file, limit)
	}
	return buf.Bytes(), nil
}

// WriteYAML writes the corpus as a manifest.
func (c *Corpus) WriteYAML(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("write the corpus manifest: %w", err)
	}
	return enc.Close()
}
