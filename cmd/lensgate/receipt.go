package main

import "errors"

// receiptCmd is not built yet.
type receiptCmd struct{}

func (c *receiptCmd) Run(e *env) error {
	return exitWith(exitUsage, errors.New("receipt: not available in this build"))
}
