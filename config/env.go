package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// envVar is an environment variable that overrides one key of a configuration of type T.
type envVar[T any] struct {
	Name string
	Key  string // the YAML key it overrides
	set  func(c *T, v string) error
}

// envString, envDuration and envInt build the setter of a variable for the field p points to.
func envString[T any](p func(*T) *string) func(*T, string) error {
	return func(c *T, v string) error { *p(c) = v; return nil }
}

func envDuration[T any](p func(*T) *time.Duration) func(*T, string) error {
	return func(c *T, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*p(c) = d
		return nil
	}
}

func envInt[T any](p func(*T) *int) func(*T, string) error {
	return func(c *T, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}
}

// applyEnv sets every variable of vars that lookup reports. A bad value is named by its key and
// variable, never echoed: it may be a secret. what names the configuration in the error.
func applyEnv[T any](c *T, vars []envVar[T], lookup func(string) (string, bool), what string) error {
	var problems []string
	for _, ev := range vars {
		v, ok := lookup(ev.Name)
		if !ok {
			continue
		}
		if err := ev.set(c, v); err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): invalid value", ev.Key, ev.Name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", what, strings.Join(problems, "; "))
	}
	return nil
}
