package testkit

import (
	"encoding/json"
	"strings"
)

// DuplicateKey returns a key that a JSON object line carries twice at its top level ("" when
// none, or when the line is not a JSON object): encoding/json keeps the last, log pipelines keep
// either or reject the line.
func DuplicateKey(line string) string {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	keys := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if keys[k] {
			return k
		}
		keys[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
	}
	return ""
}
