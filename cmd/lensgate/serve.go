package main

import "errors"

// serveCmd is not built yet.
type serveCmd struct{}

func (c *serveCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("serve: not available in this build"))
}
