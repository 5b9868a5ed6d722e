package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("asdd.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("asdd.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlToJSONValue decodes YAML and re-encodes it as JSON, which is what an editor validates.
func yamlToJSONValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const policyYAML = `runtime: builtin
ignore_paths: ["testdata/**"]
agent_review:
  version: 1
  aggregation: any-required
  required: [security]
  agents:
    security:
      preset: codex
      instruction: Look at trust boundaries.
      publication: check
    docs:
      preset: docs
      instruction: Read the docs.
      outcome: advisory
`

func TestSchemaAcceptsSupportedExamples(t *testing.T) {
	s := compileSchema(t)
	docs := map[string][]byte{
		".asdd.example.yml":     readTestdata(t, "asdd", ".asdd.example.yml"),
		".asdd.yml":             readTestdata(t, "asdd", ".asdd.yml"),
		"dev-equals-tester.yml": readTestdata(t, "asdd", "dev-equals-tester.yml"),
		"policy":                []byte(policyYAML),
		"empty mapping":         []byte("{}"),
	}
	for name, data := range docs {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
				t.Errorf("schema rejects it: %v", err)
			}
			if _, err := ParseRepo(name, data); err != nil {
				t.Errorf("decoder rejects it: %v", err)
			}
		})
	}
}

func TestSchemaRejectsInvalid(t *testing.T) {
	s := compileSchema(t)
	bad := map[string]string{
		"typo":                    "merge_posure: advisory\n",
		"nested typo":             "review:\n  max_dif_lines: 1\n",
		"string for int":          "review:\n  max_diff_lines: \"10\"\n",
		"negative":                "max_open_prs_per_author: -1\n",
		"enum":                    "merge_posture: yolo\n",
		"list as string":          "lanes: feature\n",
		"bool as string":          "require_spec: \"yes\"\n",
		"spec glob traversal":     "spec_paths: [\"../x.md\"]\n",
		"absolute ignore path":    "ignore_paths: [\"/etc/passwd\"]\n",
		"policy version":          strings.Replace(policyYAML, "version: 1", "version: 2", 1),
		"policy aggregation":      strings.Replace(policyYAML, "any-required", "most", 1),
		"policy no required":      strings.Replace(policyYAML, "  required: [security]\n", "", 1),
		"policy lens name":        strings.Replace(policyYAML, "    docs:", "    Docs:", 1),
		"policy unknown lens key": strings.Replace(policyYAML, "publication: check", "publish: check", 1),
		"policy bad publication":  strings.Replace(policyYAML, "publication: check", "publication: email", 1),
		"policy missing preset":   strings.Replace(policyYAML, "      preset: docs\n", "", 1),
		"policy blank instr":      strings.Replace(policyYAML, "Read the docs.", "\"  \"", 1),
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(yamlToJSONValue(t, []byte(doc))); err == nil {
				t.Error("schema accepts it")
			}
			if _, err := ParseRepo("x.yml", []byte(doc)); err == nil {
				t.Error("decoder accepts it")
			}
		})
	}
}

// The schema and the decoder must describe the same keys.
func TestSchemaMatchesDecoderKeys(t *testing.T) {
	var doc struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(SchemaJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	var fromSchema []string
	for k, v := range doc.Properties {
		fromSchema = append(fromSchema, k)
		if k == "agent_review" {
			continue // the policy's own keys are checked by the policy rules
		}
		for sub := range v.Properties {
			fromSchema = append(fromSchema, k+"."+sub)
		}
	}
	slices.Sort(fromSchema)
	fromDecoder := slices.Sorted(maps.Keys(KeyPaths()))
	if !slices.Equal(fromSchema, fromDecoder) {
		t.Errorf("schema keys %v\ndecoder keys %v", fromSchema, fromDecoder)
	}
}
