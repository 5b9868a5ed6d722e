package policy

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lensgate/lensgate/config"
)

// readBounded reads up to limit+1 bytes so that an oversized file is detected without reading
// all of it.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// ReadPolicyFile reads a policy file of any supported format with the same bound.
func ReadPolicyFile(path string) (config.Policy, error) {
	data, err := readBounded(path, config.MaxPolicyFileBytes)
	if err != nil {
		return config.Policy{}, configErr(fmt.Sprintf("cannot read Agent review policy %s: %s", path, osErrText(err)))
	}
	p, err := config.ParsePolicyFile(path, data)
	if err != nil {
		if ps, ok := err.(config.Problems); ok {
			if config.IsRepoConfig(path) {
				return config.Policy{}, configErr(oneLine(ps))
			}
			if ps[0].Input {
				return config.Policy{}, inputErr(ps.First())
			}
			return config.Policy{}, configErr(ps.First())
		}
		return config.Policy{}, configErr(err.Error())
	}
	return p, nil
}

// oneLine joins the problems of a YAML file into one message for the error document.
func oneLine(ps config.Problems) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if p.Line > 0 {
			parts[i] = fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", p.File, p.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// osErrText drops Go's "open PATH: " prefix; the path is already in the message.
func osErrText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
