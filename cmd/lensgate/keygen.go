package main

import (
	"encoding/hex"
	"fmt"

	"github.com/lensgate/lensgate/disclosure"
)

// keygenCmd writes a new Ed25519 key: a receipt signing key (signing_key_file) or a witness key
// for the runner's observations (witness_key_file). The file format is the same; what differs
// is where the operator puts it, and a witness key must never also be a receipt key.
type keygenCmd struct {
	Out  string `required:"" type:"path" help:"Key file to create (mode 0600; never overwritten)."`
	Role string `default:"receipt" enum:"receipt,witness" help:"What the key is for: receipt (signing_key_file) or witness (witness_key_file). Only the hint on stderr differs."`
}

func (c *keygenCmd) Run(e *env) error {
	pub, err := disclosure.GenerateKey(c.Out, nil)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	fmt.Fprintln(e.stdout, hex.EncodeToString(pub))
	if c.Role == "witness" {
		fmt.Fprintf(e.stderr, "witness key written to %s: set witness_key_file (LENSGATE_WITNESS_KEY_FILE) to it, never signing_key_file\n", c.Out)
	}
	return nil
}
