package main

import "errors"

// policyCmd is not built yet.
type policyCmd struct{}

func (c *policyCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("policy: not available in this build"))
}
