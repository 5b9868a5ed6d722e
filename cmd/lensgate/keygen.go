package main

import "errors"

// keygenCmd is not built yet.
type keygenCmd struct{}

func (c *keygenCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("keygen: not available in this build"))
}
