package webhook

import (
	"fmt"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/payload"
)

// fieldSet is the fixed set of payload fields an in-request handler reads: the answer to a
// delivery reads only these, in one validating pass, instead of decoding the whole payload.
type fieldSet struct {
	paths []string
	f     *payload.Fields
}

func newFieldSet(paths ...string) fieldSet {
	return fieldSet{paths: paths, f: payload.NewFields(paths...)}
}

// read validates doc and returns its fields; a body that is not a JSON object is a bad payload.
func (s fieldSet) read(doc []byte) (*fieldValues, error) {
	v, err := s.f.Extract(doc)
	if err != nil {
		return nil, badPayload(err)
	}
	return &fieldValues{paths: s.paths, v: v}, nil
}

// fieldValues converts fields as encoding/json would decode them into a struct field of the same
// type, keeping the first error: a wrongly typed field makes the payload bad.
type fieldValues struct {
	paths []string
	v     []payload.Value
	err   error
}

func (f *fieldValues) get(path string) payload.Value {
	for i, p := range f.paths {
		if p == path {
			return f.v[i]
		}
	}
	f.fail(path, fmt.Errorf("field not in the set read"))
	return payload.Value{}
}

func (f *fieldValues) fail(path string, err error) {
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("field %s: %w", path, err)
	}
}

func (f *fieldValues) str(path string) string {
	s, err := f.get(path).String()
	f.fail(path, err)
	return s
}

func (f *fieldValues) int64(path string) int64 {
	n, err := f.get(path).Int64()
	f.fail(path, err)
	return n
}

func (f *fieldValues) bool(path string) bool {
	b, err := f.get(path).Bool()
	f.fail(path, err)
	return b
}

// present reports whether the field is in the payload, null included, as a json.RawMessage
// field would be non-nil.
func (f *fieldValues) present(path string) bool { return f.get(path).Present() }

// object reports whether the field is an object. Missing and null are not, as a pointer to a
// struct stays nil; any other kind is a type error.
func (f *fieldValues) object(path string) bool {
	switch v := f.get(path); v.Kind {
	case payload.Object:
		return true
	case payload.Missing, payload.Null:
		return false
	default:
		f.fail(path, fmt.Errorf("%s value where an object is expected", v.Kind))
		return false
	}
}

// objects checks that each field is an object, null or missing, as a struct field would.
func (f *fieldValues) objects(paths ...string) {
	for _, p := range paths {
		f.object(p)
	}
}

// user reads the login and type of the user at prefix, enough for isBot; nil when absent.
func (f *fieldValues) user(prefix string) *github.User {
	if !f.object(prefix) {
		return nil
	}
	login, typ := f.str(prefix+".login"), f.str(prefix+".type")
	return &github.User{Login: &login, Type: &typ}
}

// repository reads the repository's name and owner login, enough for the log context and a
// job; nil when the payload has none.
func (f *fieldValues) repository() *github.Repository {
	if !f.object("repository") {
		return nil
	}
	f.objects("repository.owner")
	name, owner := f.str("repository.name"), f.str("repository.owner.login")
	return &github.Repository{Name: &name, Owner: &github.User{Login: &owner}}
}

// installationID reads installation.id, 0 when the payload has none.
func (f *fieldValues) installationID() int64 {
	f.objects("installation")
	return f.int64("installation.id")
}

// timestamp reads a time as go-github's Timestamp decodes it (Unix seconds or RFC 3339); nil
// when absent or null.
func (f *fieldValues) timestamp(path string) *github.Timestamp {
	v := f.get(path)
	if v.Kind == payload.Missing || v.Kind == payload.Null {
		return nil
	}
	var ts github.Timestamp
	f.fail(path, ts.UnmarshalJSON(v.Raw))
	return &ts
}
