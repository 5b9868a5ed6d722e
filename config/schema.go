package config

import _ "embed"

//go:embed asdd.schema.json
var schemaJSON []byte

// SchemaJSON returns the JSON Schema (draft 2020-12) of .asdd.yml, for editor completion. It
// describes the same keys, types and defaults as the decoder; the decoder stays the authority
// for rules a schema cannot express, such as byte lengths and cross-references in agent_review.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }
