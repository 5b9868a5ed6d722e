package main

import (
	"encoding/hex"
	"fmt"

	"github.com/lensgate/lensgate/disclosure"
)

// keygenCmd writes a new Ed25519 receipt signing key.
type keygenCmd struct {
	Out string `required:"" type:"path" help:"Key file to create (mode 0600; never overwritten)."`
}

func (c *keygenCmd) Run(e *env) error {
	pub, err := disclosure.GenerateKey(c.Out, nil)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	fmt.Fprintln(e.stdout, hex.EncodeToString(pub))
	return nil
}
