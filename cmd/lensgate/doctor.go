package main

import "errors"

// doctorCmd is not built yet.
type doctorCmd struct{}

func (c *doctorCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("doctor: not available in this build"))
}
