package disclosure

import (
	"errors"
	"os"
)

func readFileNoT(path string) ([]byte, error) { return os.ReadFile(path) }

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}
