package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/delegate"
	"github.com/lensgate/lensgate/review/runtime/dryrun"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// reviewCmd runs the whole review pipeline on a local git repository.
type reviewCmd struct {
	Repo     string            `default:"." placeholder:"DIR" help:"Local git repository."`
	Base     string            `required:"" placeholder:"REF" help:"Base revision of the change."`
	Head     string            `default:"HEAD" placeholder:"REF" help:"Head revision of the change."`
	Config   string            `placeholder:"FILE" help:"Configuration (.asdd.yml, .yaga.toml or pyproject.toml); default: .asdd.yml of the base revision, else the built-in default policy."`
	Runtime  string            `placeholder:"NAME" help:"Default runtime for lenses whose preset names none (builtin, openai, dryrun, or an adapter name)."`
	Adapters string            `placeholder:"DIR" help:"Directory of operator-installed review adapters, enabled as exec runtimes."`
	Preset   map[string]string `placeholder:"NAME=RUNTIME" help:"Operator-defined preset: lenses whose preset is NAME are reviewed by the enabled runtime RUNTIME. Repeatable."`
	Format   string            `default:"text" enum:"text,json,markdown,sarif" help:"Output format: text, json, markdown or sarif (SARIF 2.1.0, for code scanning; the receipt and observation, when signed, are run properties)."`
	SignKey  string            `placeholder:"FILE" help:"Ed25519 key file (lensgate keygen): also print the signed receipt."`
	// WitnessKey signs what this process observed while it ran the lenses, beside the receipt.
	WitnessKey string `placeholder:"FILE" help:"Ed25519 witness key file (lensgate keygen, not the --sign-key): also print the runner's signed observation of the review. Needs --sign-key."`
	// ObservationOut writes the observation envelope to a file as well.
	ObservationOut string `name:"observation-out" placeholder:"FILE" help:"Also write the observation envelope to FILE (with --witness-key or --runner)."`
	// Runner sends the runtime calls to a lensgate runner, which signs the observation.
	Runner      string `placeholder:"URL" help:"Run the lenses in the lensgate runner at URL (unix:///path.sock or http://host:port), which signs the observation with its witness key; needs --runner-token, and --sign-key for the observation."`
	RunnerToken string `name:"runner-token" placeholder:"FILE" help:"Token file shared with the --runner."`
}

// Run implements the command. Exit 0: gate passed; 1: not passed; 2: unusable input.
func (c *reviewCmd) Run(e *env) error {
	cfg, err := c.loadConfig(e)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if err := c.loadSecrets(e, cfg); err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Runtime != "" {
		cfg.Runtime = c.Runtime
	}
	var signer *disclosure.Signer
	if c.SignKey != "" {
		key, err := disclosure.LoadPrivateKey(c.SignKey)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		signer = &disclosure.Signer{Key: key}
	}
	var witness *observation.Signer
	if c.WitnessKey != "" {
		if signer == nil {
			return exitWith(exitUsage, errors.New("--witness-key needs --sign-key: an observation accompanies a receipt"))
		}
		key, err := disclosure.LoadPrivateKey(c.WitnessKey)
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--witness-key: %w", err))
		}
		if key.Equal(signer.Key) {
			return exitWith(exitUsage, errors.New("--witness-key is the --sign-key: the witness key must be a key of its own"))
		}
		witness = &observation.Signer{Key: key}
	}
	var reg *runtime.Registry
	if c.Runner != "" {
		if witness != nil {
			return exitWith(exitUsage, errors.New("--witness-key with --runner: the runner holds the witness key"))
		}
		if c.RunnerToken == "" {
			return exitWith(exitUsage, errors.New("--runner needs --runner-token"))
		}
		token, err := runner.LoadToken(c.RunnerToken)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		client, err := runner.NewClient(c.Runner, token, nil)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		if reg, _, err = client.Registry(e.ctx); err != nil {
			return exitWith(exitUsage, err)
		}
	} else if reg, err = c.registry(cfg); err != nil {
		return exitWith(exitUsage, err)
	}
	subj, err := review.LocalSubject(e.ctx, c.Repo, c.Base, c.Head)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	// Runtime failures are already in the output as pending causes; only errors are logged.
	p := review.NewPipeline(review.Options{Runtimes: reg, Logger: zerolog.New(e.stderr).Level(zerolog.ErrorLevel),
		EnableHint: "for openai set ASDD_MODEL_URL and ASDD_RUNTIME_TOKEN, for an adapter pass --adapters DIR", Version: version})
	dec, err := p.Review(e.ctx, subj, cfg)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	var disc *disclosure.Disclosure
	if signer != nil {
		// The head commit's message stands in for a pull request body: the receipt binds it and
		// the disclosure block printed with the receipt, as the App binds a PR body.
		disc, err = disclosure.Disclose(subj.Body, review.Predicate(dec, subj, time.Now()), *signer)
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("sign the receipt: %w", err))
		}
	}
	var obs *observation.Signed
	if witness != nil || (c.Runner != "" && disc != nil) {
		if c.Runner != "" {
			rn := runner.RunOf(dec.Session)
			if rn == nil {
				return exitWith(exitUsage, errors.New("no lens ran in the runner, so it observed nothing"))
			}
			if obs, err = rn.Observe(e.ctx, disc.Receipt.Envelope, nil, 0); err != nil {
				return exitWith(exitUsage, fmt.Errorf("the runner's observation: %w", err))
			}
		} else if obs, err = review.SignObservation(dec, disc.Receipt, version, *witness, 0); err != nil {
			return exitWith(exitUsage, fmt.Errorf("sign the observation: %w", err))
		}
		if c.ObservationOut != "" {
			if err := os.WriteFile(c.ObservationOut, obs.Envelope, 0o644); err != nil {
				return exitWith(exitUsage, fmt.Errorf("write the observation: %w", err))
			}
		}
	}
	if err := writeReview(e.stdout, c.Format, dec, disc, obs); err != nil {
		return err
	}
	if !dec.Gate.Passed() {
		return exitWith(exitNegative, nil)
	}
	return nil
}

// loadConfig reads --config, or .asdd.yml from the base revision (never from the head, so a
// change cannot weaken the review it gets), or falls back to the default configuration.
func (c *reviewCmd) loadConfig(e *env) (*config.Repo, error) {
	if c.Config != "" {
		// Bounded: --config /dev/zero must not exhaust memory.
		data, err := readConfig(c.Config)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		return parseReviewConfig(c.Config, data)
	}
	if strings.HasPrefix(c.Base, "-") {
		return nil, errors.New("a revision may not start with '-'")
	}
	// The first of these files present at the base revision is the configuration; a
	// pyproject.toml counts only when it has a [tool.yaga] table.
	for _, name := range []string{".asdd.yml", ".yaga.toml", "pyproject.toml"} {
		data, ok, err := c.showAtBase(e, name)
		if err != nil {
			return nil, err
		}
		if !ok || name == "pyproject.toml" && !bytes.Contains(data, []byte("[tool.yaga")) {
			continue
		}
		label := c.Base + ":" + name
		if name == "pyproject.toml" {
			// The TOML loader recognises pyproject.toml by its base name.
			label = c.Base + ":./" + name
		}
		return parseReviewConfig(label, data)
	}
	return config.DefaultRepo(), nil
}

// showAtBase reads one file of the base revision, bounded one byte over the configuration
// cap so the decoder reports an oversized file itself. ok is false when the file is absent
// (or the repository unusable: LocalSubject reports that).
func (c *reviewCmd) showAtBase(e *env, name string) (data []byte, ok bool, err error) {
	cmd := exec.CommandContext(e.ctx, "git", "-C", c.Repo, "show", "--end-of-options", c.Base+":"+name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, fmt.Errorf("read %s of the base revision: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("read %s of the base revision: %w", name, err)
	}
	data, _ = io.ReadAll(io.LimitReader(stdout, config.MaxRepoFileBytes+1))
	if len(data) > config.MaxRepoFileBytes {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return data, true, nil
	}
	if err := cmd.Wait(); err != nil {
		return nil, false, nil
	}
	return data, true, nil
}

// parseReviewConfig reads an .asdd.yml, or a YAGA policy file into the default configuration.
func parseReviewConfig(name string, data []byte) (*config.Repo, error) {
	if config.IsRepoConfig(name) {
		cfg, err := config.ParseRepo(name, data)
		return cfg, namedProblems(name, err)
	}
	pol, err := config.ParsePolicyFile(name, data)
	if err != nil {
		return nil, namedProblems(name, err)
	}
	cfg := config.DefaultRepo()
	cfg.Source, cfg.Policy, cfg.PolicyDefaulted = name, pol, false
	return cfg, nil
}

// namedProblems makes every configuration problem name its file, including the ones about the
// whole file (size, encoding) that carry no line.
func namedProblems(file string, err error) error {
	ps, ok := err.(config.Problems)
	if !ok {
		return err
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
		if p.Line == 0 && !strings.Contains(p.Message, file) {
			lines[i] = file + ": " + lines[i]
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// registry enables builtin and dryrun always, openai when an endpoint and token are in the
// environment, and every adapter of --adapters.
func (c *reviewCmd) registry(cfg *config.Repo) (*runtime.Registry, error) {
	rts := []runtime.Runtime{builtin.New(builtin.Options{}), dryrun.Runtime{}}
	if url, tok := os.Getenv("ASDD_MODEL_URL"), os.Getenv("ASDD_RUNTIME_TOKEN"); url != "" && tok != "" {
		rt, err := openai.New(openai.Options{BaseURL: url, Token: tok, Model: os.Getenv("ASDD_MODEL"), LearnContext: true})
		if err != nil {
			return nil, err
		}
		rts = append(rts, rt)
	}
	if c.Adapters != "" {
		adapters, err := rtexec.Discover(c.Adapters, rtexec.Options{
			ModelURL: os.Getenv("ASDD_MODEL_URL"), Token: os.Getenv("ASDD_RUNTIME_TOKEN"), Model: os.Getenv("ASDD_MODEL"),
		})
		if err != nil {
			return nil, err
		}
		for _, a := range adapters {
			rts = append(rts, a)
		}
	}
	// Offline nobody can ask a review bot: delegated lenses say so and stay pending.
	dl, err := delegate.New()
	if err != nil {
		return nil, err
	}
	rts = append(rts, dl)
	reg := runtime.NewRegistry(rts...)
	if err := addDelegatePresets(reg, dl, c.Preset); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(c.Preset))
	for name := range c.Preset {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !config.ValidName(name) {
			return nil, fmt.Errorf("--preset %q: a preset is a lower-case label such as security or house-style", name)
		}
		if err := reg.AddPreset(name, c.Preset[name]); err != nil {
			return nil, fmt.Errorf("--preset %s=%s: %w (enabled: %s)", name, c.Preset[name], err, strings.Join(reg.Names(), ", "))
		}
	}
	return reg, nil
}

func writeReview(w io.Writer, format string, d *review.Decision, disc *disclosure.Disclosure, obs *observation.Signed) error {
	switch format {
	case "json":
		doc := struct {
			*review.Decision
			Receipt         json.RawMessage `json:"receipt,omitempty"`
			DisclosureBlock string          `json:"disclosure_block,omitempty"`
			Observation     json.RawMessage `json:"observation,omitempty"`
		}{Decision: d}
		if disc != nil {
			doc.Receipt = disc.Receipt.Envelope
			doc.DisclosureBlock = disc.Block
		}
		if obs != nil {
			doc.Observation = obs.Envelope
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(doc)
	case "sarif":
		var receipt, observed []byte
		if disc != nil {
			receipt = disc.Receipt.Envelope
		}
		if obs != nil {
			observed = obs.Envelope
		}
		return writeSARIF(w, d, receipt, observed)
	case "markdown":
		fmt.Fprint(w, d.Comment)
	default:
		writeText(w, d)
	}
	if disc != nil {
		fmt.Fprintf(w, "\nDisclosure block (bound to the head commit message as the body):\n%s\n", disc.Block)
		fmt.Fprintf(w, "\nSigned receipt (DSSE envelope, receipt digest %s):\n%s", disc.Receipt.ReceiptDigest, disc.Receipt.Envelope)
	}
	if obs != nil {
		fmt.Fprintf(w, "\nThis review was also observed by the runner: observation sha256:%s, signed with the witness key:\n%s", obs.Digest, obs.Envelope)
	}
	return nil
}

// writeText prints the review for a terminal. Every untrusted string (paths, titles,
// summaries, causes) goes through review.PlainText or review.DisplayPath, so a crafted file name
// or adapter answer cannot inject terminal control sequences.
func writeText(w io.Writer, d *review.Decision) {
	fmt.Fprintf(w, "Gate: %s (%s)\n", d.Gate.State, review.PlainText(d.Gate.Reason))
	fmt.Fprintf(w, "Recommendation: %s\n", d.Recommendation)
	fmt.Fprintf(w, "Plan digest: %s\n", d.PlanDigest)
	fmt.Fprintf(w, "Reviewed: %s..%s, diff sha256 %s\n\n", digest.Short(d.Subject.BaseSHA), digest.Short(d.Subject.HeadSHA), d.Subject.ReviewedDiffDigest)
	writeWalkthrough(w, d.Walkthrough)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LENS\tROLE\tOUTCOME\tRUNTIME\tSUMMARY")
	for _, l := range d.Lenses {
		role := "advisory"
		if l.Required {
			role = "required"
		}
		sum := l.Summary
		if l.Cause != "" {
			sum = "pending: " + l.Cause
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, role, l.Outcome, review.PlainText(l.Runtime), review.PlainText(sum))
	}
	tw.Flush()
	for _, m := range d.Intake.Messages {
		if m.Message != "" {
			fmt.Fprintf(w, "\nIntake %s: %s\n", m.Check, review.PlainText(m.Message))
		}
	}
	if len(d.Findings) > 0 {
		fmt.Fprintf(w, "\nFindings (%d):\n", len(d.Findings))
		for _, f := range d.Findings {
			loc := review.DisplayPath(f.Path)
			if f.Line > 0 {
				loc = fmt.Sprintf("%s:%d", loc, f.Line)
			}
			fmt.Fprintf(w, "  %-8s %-12s %s  %s  [%s]\n", f.Severity, f.Lens, loc, review.PlainText(f.Title), f.ID)
			// The message says what is wrong and how to fix it; the title alone does not.
			if body := review.PlainText(f.Body); body != "" {
				fmt.Fprintf(w, "           %s\n", body)
			}
		}
	}
	printWithdrawn(w, d)
	status, pending := d.ReportedCoverage()
	fmt.Fprintf(w, "\nCoverage: %s (%d of %d file(s) reviewed", status, d.Coverage.FilesReviewed, d.Coverage.FilesTotal)
	if pending > 0 {
		fmt.Fprintf(w, "; %d of %d lens(es) pending", pending, len(d.Lenses))
	}
	fmt.Fprintln(w, ")")
	for _, g := range d.Coverage.Gaps {
		fmt.Fprintf(w, "  gap: %s: %s\n", review.DisplayPath(g.Path), review.PlainText(g.Reason))
	}
	if line := review.RedactedLine(d.ModelInput); line != "" {
		fmt.Fprintf(w, "\n%s\n", line)
	}
	if n := len(d.ModelInput.WithheldFiles); n > 0 {
		fmt.Fprintf(w, "%d file(s) withheld from the model (models.exclude_paths); they are coverage gaps above.\n", n)
	}
	if line := review.TokensLine(d); line != "" {
		fmt.Fprintf(w, "\n%s\n", line)
	}
}
