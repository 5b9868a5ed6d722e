package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/conformance"
	"github.com/lensgate/lensgate/disclosure/observation"
)

// receiptCmd groups the receipt subcommands.
type receiptCmd struct {
	Emit        receiptEmitCmd        `cmd:"" help:"Sign an agent-review predicate into a DSSE envelope."`
	Verify      receiptVerifyCmd      `cmd:"" help:"Verify a receipt and report every axis separately."`
	Conformance receiptConformanceCmd `cmd:"" help:"Run agent-review conformance cases."`
}

type receiptEmitCmd struct {
	Predicate string `required:"" type:"path" help:"Predicate JSON file."`
	Key       string `required:"" type:"path" help:"Ed25519 key file (lensgate keygen)."`
	Version   string `name:"predicate-version" default:"auto" enum:"auto,v0.1,v0.2,v0.3" help:"Predicate version; auto is v0.2, or v0.3 with a verifier block."`
	Out       string `type:"path" help:"Write the envelope here instead of stdout."`
}

func (c *receiptEmitCmd) Run(e *env) error {
	raw, err := readInput(c.Predicate, disclosure.MaxEnvelopeBytes)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	key, err := disclosure.LoadPrivateKey(c.Key)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	v := disclosure.Version(c.Version)
	if c.Version == "auto" {
		v = ""
	}
	rc, err := disclosure.EmitJSON(raw, v, disclosure.Signer{Key: key})
	var refused *disclosure.RefusedError
	if errors.As(err, &refused) {
		for _, is := range refused.Issues {
			fmt.Fprintf(e.stderr, "refused: %s\n", is)
		}
		return exitWith(exitNegative, nil)
	}
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Out != "" {
		if err := os.WriteFile(c.Out, rc.Envelope, 0o644); err != nil {
			return exitWith(exitUsage, fmt.Errorf("write envelope: %w", err))
		}
		fmt.Fprintf(e.stderr, "receipt %s (%s) subject %s\n", rc.ReceiptDigest, rc.Version, rc.SubjectDigest)
		return nil
	}
	_, err = e.stdout.Write(rc.Envelope)
	return err
}

type receiptVerifyCmd struct {
	Envelope      string `required:"" type:"path" help:"DSSE envelope JSON file."`
	PublicKey     string `required:"" name:"public-key" help:"Trusted public key: 64 hex characters or a file holding them."`
	SubjectDigest string `name:"subject-digest" help:"Expected subject digest (hex); without it a receipt is never ok."`
	Body          string `type:"path" help:"Body as the reader sees it; checks the visible block against the signed predicate."`
	Policy        string `default:"default" help:"default, none, or a policy JSON file."`
	Format        string `default:"text" enum:"text,json" help:"Output format."`
	// The runner observation is a separate axis: it never changes the receipt's ok.
	Observation        string   `type:"path" help:"Runner observation (review-run statement) published beside the receipt; reported as the runner_observation axis."`
	WitnessKey         string   `name:"witness-key" help:"The runner's witness public key (role witness at /.well-known/lensgate/keys): 64 hex characters or a file holding them."`
	ExpectRuntime      []string `name:"expect-runtime" placeholder:"NAME=WHAT" help:"Runtime identity every call by runtime NAME must show: NAME=sha256:HEX (executable or binary), NAME=version:V, NAME=host:H, NAME=model:M (the model that answered) or NAME=interpreter:sha256:HEX (the program an adapter's #! line starts). Repeatable."`
	RequireObservation bool     `name:"require-observation" help:"Exit 1 unless the runner observation is MATCH (the receipt must still be ok)."`
}

func (c *receiptVerifyCmd) Run(e *env) error {
	envelope, err := readInput(c.Envelope, disclosure.MaxEnvelopeBytes)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	pub, err := loadPublicKey(c.PublicKey)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	subject := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(c.SubjectDigest), "sha256:"))
	if subject != "" && !isHex64(subject) {
		return exitWith(exitUsage, fmt.Errorf("--subject-digest: want 64 hex characters, got %q", c.SubjectDigest))
	}
	opts := disclosure.Options{PublicKey: pub, ExpectedSubjectDigest: subject}
	switch c.Policy {
	case "default":
		opts.Policy = disclosure.DefaultPolicy()
	case "none":
	default:
		raw, err := readInput(c.Policy, 1<<20)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		opts.Policy = disclosure.ParsePolicy(raw)
	}
	if c.Body != "" {
		raw, err := readInput(c.Body, 25<<20)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		body := string(raw)
		opts.Body = &body
	}
	obsOpts, obsEnv, err := c.observationInput(envelope, pub)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	rep := disclosure.Verify(envelope, opts)
	obs := observation.Verify(obsEnv, obsOpts)
	if c.Format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		out := struct {
			*disclosure.Report
			RunnerObservation string              `json:"runner_observation"`
			Observation       *observation.Result `json:"observation"`
		}{rep, obs.RunnerObservation, obs}
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		writeReportText(e.stdout, rep)
		fmt.Fprintln(e.stdout)
		fmt.Fprint(e.stdout, obs.Text())
	}
	var obj map[string]json.RawMessage
	if slices.Contains(rep.ReasonCodes, disclosure.CodeEnvelopeUnreadable) && json.Unmarshal(envelope, &obj) != nil {
		// Not a JSON object at all (truncated, wrong file): unusable input, not a verdict about
		// a receipt. A JSON envelope with a bad payload is a negative verdict (exit 1).
		return exitWith(exitUsage, fmt.Errorf("%s is not a DSSE envelope (not a JSON object)", c.Envelope))
	}
	if !rep.OK || rep.VisibleBlockRendering == disclosure.MatchMismatch {
		return exitWith(exitNegative, nil)
	}
	if c.RequireObservation && obs.RunnerObservation != observation.Match {
		return exitWith(exitNegative, nil)
	}
	return nil
}

// observationInput reads --observation, --witness-key and --expect-runtime.
func (c *receiptVerifyCmd) observationInput(receipt, receiptKey []byte) (observation.Options, []byte, error) {
	o := observation.Options{Receipt: receipt, ReceiptKey: receiptKey}
	if c.Observation == "" {
		if c.WitnessKey != "" || len(c.ExpectRuntime) > 0 {
			return o, nil, errors.New("--witness-key and --expect-runtime need --observation")
		}
		return o, nil, nil
	}
	if c.WitnessKey == "" {
		return o, nil, errors.New("--observation needs --witness-key: the runner's public key, taken from the operator, never from the observation")
	}
	env, err := readInput(c.Observation, observation.MaxEnvelopeBytes)
	if err != nil {
		return o, nil, err
	}
	if o.WitnessKey, err = loadPublicKey(c.WitnessKey); err != nil {
		return o, nil, fmt.Errorf("--witness-key: %w", err)
	}
	for _, x := range c.ExpectRuntime {
		name, what, ok := strings.Cut(x, "=")
		kind, val, ok2 := strings.Cut(what, ":")
		if !ok || !ok2 || name == "" || val == "" {
			return o, nil, fmt.Errorf("--expect-runtime %q: want NAME=sha256:HEX, NAME=version:V, NAME=host:H or NAME=model:M", x)
		}
		ex := observation.Expectation{Name: name}
		switch kind {
		case "sha256":
			if val = strings.ToLower(val); !isHex64(val) {
				return o, nil, fmt.Errorf("--expect-runtime %q: the digest must be 64 hex characters", x)
			}
			ex.ExecutableSHA256 = val
		case "version":
			ex.Version = val
		case "host":
			ex.EndpointHost = val
		case "model":
			ex.ModelResponded = val
		case "interpreter":
			if val = strings.ToLower(strings.TrimPrefix(val, "sha256:")); !isHex64(val) {
				return o, nil, fmt.Errorf("--expect-runtime %q: the interpreter digest must be 64 hex characters", x)
			}
			ex.InterpreterSHA256 = val
		default:
			return o, nil, fmt.Errorf("--expect-runtime %q: unknown kind %q (sha256, version, host, model, interpreter)", x, kind)
		}
		o.Expected = append(o.Expected, ex)
	}
	return o, env, nil
}

// loadPublicKey accepts 64 hex characters or a path to a .publickey.hex file.
func loadPublicKey(arg string) ([]byte, error) {
	if isHex64(strings.ToLower(arg)) {
		k, err := disclosure.ParsePublicKey([]byte(strings.ToLower(arg)))
		if err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		return k, nil
	}
	raw, err := readInput(arg, 4096)
	if err != nil {
		return nil, fmt.Errorf("public key: not 64 hex characters and not a readable file: %w", err)
	}
	if strings.HasPrefix(string(raw), "ed25519-seed:") || strings.Contains(string(raw), "PRIVATE KEY") {
		return nil, fmt.Errorf("public key %s: this is a private signing key; pass the public key keygen printed", arg)
	}
	k, err := disclosure.ParsePublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", arg, err)
	}
	return k, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func readInput(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

func tri(b *bool) string {
	if b == nil {
		return "not evaluated"
	}
	if *b {
		return "yes"
	}
	return "NO"
}

func orNull(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

func writeReportText(w io.Writer, r *disclosure.Report) {
	verdict := "NOT OK"
	if r.OK {
		verdict = "ok"
	}
	fmt.Fprintf(w, "receipt:               %s\n", verdict)
	fmt.Fprintf(w, "predicate:             %s (%s)\n", r.PredicateType, r.PredicateVersionStatus)
	if r.ReceiptDigest != "" {
		fmt.Fprintf(w, "receipt digest:        %s\n", r.ReceiptDigest)
	}
	if r.SubjectName != "" {
		fmt.Fprintf(w, "subject:               %s sha256:%s\n", r.SubjectName, r.SubjectDigest)
	}
	fmt.Fprintf(w, "signature:             %s\n", tri(r.CryptoOK))
	fmt.Fprintf(w, "structure:             %s\n", tri(r.StructureOK))
	fmt.Fprintf(w, "subject binding:       %s (expectation %s, %s)\n", tri(r.SubjectBindingOK), r.SubjectExpectation, r.ExpectedSubjectMatch)
	fmt.Fprintf(w, "findings root:         %s\n", tri(r.FindingsRootOK))
	fmt.Fprintf(w, "assurance:             %s\n", tri(r.AssuranceOK))
	fmt.Fprintf(w, "body core digest:      %s\n", r.BodyCoreDigestMatch)
	fmt.Fprintf(w, "disclosure core:       %s\n", r.DisclosureCoreDigestMatch)
	if r.VisibleBlockRendering != "" {
		fmt.Fprintf(w, "visible block:         %s\n", r.VisibleBlockRendering)
	}
	if r.EventTimeStatus != "" {
		fmt.Fprintf(w, "time (event/observation/signature/external): %s / %s / %s / %s\n",
			r.EventTimeStatus, r.ObservationTimeStatus, r.SignatureTimeStatus, r.ExternalTimeStatus)
	}
	if vb := r.VerifierBlock; vb != nil {
		if vb.Present {
			fmt.Fprintf(w, "verifier block:        %s %s %s, valid %s, matches this verifier %s\n",
				orNull(vb.Implementation), orNull(vb.Version), orNull(vb.BuildSource), tri(vb.Valid), vb.MatchesThisVerifier)
		} else {
			fmt.Fprintf(w, "verifier block:        absent\n")
		}
	}
	fmt.Fprintf(w, "policy decision:       %s", orNull(r.PolicyDecision))
	if r.PolicyName != nil {
		fmt.Fprintf(w, " (%s %s)", *r.PolicyName, orNull(r.PolicyDigest))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "currentness:           %s\n", r.Currentness)
	fmt.Fprintf(w, "reason codes:          %s\n", strings.Join(r.ReasonCodes, ", "))
	fmt.Fprintf(w, "advisory codes:        %s\n", strings.Join(r.AdvisoryCodes, ", "))
	if r.Automation != nil {
		fmt.Fprintf(w, "safe for automation:   %t %s\n", r.Automation.SafeForAutomation, strings.Join(r.Automation.AutomationBlockers, ", "))
	}
	for _, m := range r.Errors {
		fmt.Fprintf(w, "error:   %s\n", m)
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}

type receiptConformanceCmd struct {
	Dir    string `required:"" type:"path" help:"Directory of case directories in the upstream case format."`
	Format string `default:"text" enum:"text,json" help:"Output format."`
}

func (c *receiptConformanceCmd) Run(e *env) error {
	results, err := conformance.Run(e.ctx, c.Dir)
	if results == nil && err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		passed := 0
		for _, r := range results {
			mark := "FAIL"
			if r.Passed {
				mark, passed = "ok  ", passed+1
			}
			fmt.Fprintf(e.stdout, "%s %s", mark, r.CaseID)
			if r.Detail != "" {
				fmt.Fprintf(e.stdout, " (%s)", r.Detail)
			}
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "%d/%d cases passed\n", passed, len(results))
	}
	if err != nil {
		return exitWith(exitUsage, err)
	}
	for _, r := range results {
		if !r.Passed {
			return exitWith(exitNegative, nil)
		}
	}
	return nil
}
