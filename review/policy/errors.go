package policy

import "errors"

// Kind classifies an error the way YAGA's error documents do.
type Kind string

const (
	// KindConfiguration is a policy or receipt that is unreadable or invalid.
	KindConfiguration Kind = "configuration"
	// KindInput is a bad argument, such as an unknown output format.
	KindInput Kind = "input"
)

// Error is an error of the policy commands: a kind and a one-line message meant for users.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

func configErr(msg string) error { return &Error{Kind: KindConfiguration, Message: msg} }

func inputErr(msg string) error { return &Error{Kind: KindInput, Message: msg} }

// AsError classifies any error: an *Error keeps its kind, anything else is a configuration error.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Kind: KindConfiguration, Message: err.Error()}
}
