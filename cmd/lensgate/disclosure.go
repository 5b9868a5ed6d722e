package main

import (
	"encoding/json"
	"fmt"

	"github.com/lensgate/lensgate/disclosure"
)

// disclosureCmd groups the body-block subcommands.
type disclosureCmd struct {
	Digest disclosureDigestCmd `cmd:"" help:"Print the bodyCoreDigest and disclosureCoreDigest of a body."`
}

type disclosureDigestCmd struct {
	Body   string `required:"" type:"path" help:"Pull request or issue body file."`
	Format string `default:"text" enum:"text,json" help:"Output format."`
}

func (c *disclosureDigestCmd) Run(e *env) error {
	raw, err := readInput(c.Body, 25<<20)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	body := string(raw)
	core, cerr := disclosure.BodyCoreDigest(body)
	if cerr != nil {
		// An ambiguous body has no digest: refusing is the answer, not a crash.
		return exitWith(exitUsage, fmt.Errorf("bodyCoreDigest: %w", cerr))
	}
	dcore, derr := disclosure.DisclosureCoreDigest(body)
	if c.Format == "json" {
		out := map[string]any{"bodyCoreDigest": core, "disclosureCoreDigest": nil}
		if derr == nil {
			out["disclosureCoreDigest"] = dcore
		} else {
			out["disclosureCoreRefused"] = derr.Error()
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(e.stdout, "bodyCoreDigest       %s\n", core)
	if derr != nil {
		fmt.Fprintf(e.stdout, "disclosureCoreDigest none (%v)\n", derr)
	} else {
		fmt.Fprintf(e.stdout, "disclosureCoreDigest %s\n", dcore)
	}
	return nil
}
