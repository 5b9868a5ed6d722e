package disclosure

import (
	"errors"
	"os"
)

func readFileNoT(path string) ([]byte, error) { return os.ReadFile(path) }

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }
