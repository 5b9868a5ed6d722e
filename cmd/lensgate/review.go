package main

import "errors"

// reviewCmd is not built yet.
type reviewCmd struct{}

func (c *reviewCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("review: not available in this build"))
}
