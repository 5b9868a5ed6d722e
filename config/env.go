package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// envVar is an environment variable that overrides one key of a configuration of type T.
type envVar[T any] struct {
	Name string
	Key  string // the YAML key it overrides
	// set stores the value; its error says what form the value must take, without repeating
	// the value (it may be a secret).
	set func(c *T, v string) error
}

// envString, envDuration, envInt and envBool build the setter of a variable for the field p
// points to.
func envString[T any](p func(*T) *string) func(*T, string) error {
	return func(c *T, v string) error { *p(c) = v; return nil }
}

func envDuration[T any](p func(*T) *time.Duration) func(*T, string) error {
	return func(c *T, v string) error {
		d, err := parseEnvDuration(v)
		if err != nil {
			return err
		}
		*p(c) = d
		return nil
	}
}

func envInt[T any](p func(*T) *int) func(*T, string) error {
	return func(c *T, v string) error {
		n, err := parseEnvInt(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}
}

func envBool[T any](p func(*T) *bool) func(*T, string) error {
	return func(c *T, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return errors.New("must be true or false")
		}
		*p(c) = b
		return nil
	}
}

// parseEnvDuration reads a Go duration; a bare number, which time.ParseDuration refuses, gets
// the forms it could have meant (a number is not a secret).
func parseEnvDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err == nil {
		return d, nil
	}
	if n := strings.TrimSpace(v); n != "" {
		if _, ferr := strconv.ParseFloat(n, 64); ferr == nil {
			return 0, fmt.Errorf("must be a duration with a unit: %ss, %sm or %sh", n, n, n)
		}
	}
	return 0, errors.New("must be a duration with a unit, such as 30s, 10m or 1h30m")
}

func parseEnvInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, errors.New("must be a whole number, such as 4")
	}
	return n, nil
}

// applyEnv sets every variable of vars that lookup reports and returns a problem for each
// bad value, naming its key (rendered with the variable) but never the value. set records the
// keys the environment set.
func applyEnv[T any](c *T, vars []envVar[T], lookup func(string) (string, bool), set map[string]bool) Problems {
	var problems Problems
	for _, ev := range vars {
		v, ok := lookup(ev.Name)
		if !ok {
			continue
		}
		set[ev.Key] = true
		if err := ev.set(c, v); err != nil {
			problems = append(problems, Problem{Key: ev.Key, Message: err.Error()})
		}
	}
	return problems
}
