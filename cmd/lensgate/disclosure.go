package main

import "errors"

// disclosureCmd is not built yet.
type disclosureCmd struct{}

func (c *disclosureCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("disclosure: not available in this build"))
}
