package disclosure

import "fmt"

// verifierBlockErrors checks producer.verifier, the v0.3 verifier block, and returns every
// problem; the block only ever describes a self-declared measurement.
func verifierBlockErrors(v any) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	b, ok := asObj(v)
	if !ok {
		return []string{"must be an object"}
	}
	known := map[string]bool{"implementation": true, "version": true, "build": true,
		"assurance": true, "vectorSet": true, "testResult": true}
	for _, k := range sortedKeys(b) {
		if !known[k] {
			add("unknown %s", k)
		}
	}
	if !nonEmptyString(b["implementation"]) {
		add("implementation must be a non-empty string")
	}
	if s, ok := b["version"].(string); !ok || !reSemver.MatchString(s) {
		add("version must be a release version")
	}
	if build, ok := asObj(b["build"]); !ok {
		add("build must be an object")
	} else {
		for _, k := range sortedKeys(build) {
			if k != "digest" && k != "source" && k != "files" {
				add("build: unknown %s", k)
			}
		}
		if !strictDigest(build["digest"]) {
			add("build.digest must be exactly {sha256: <64 hex>}")
		}
		if !oneOf(build["source"], "installed-record", "source-tree") {
			add("build.source must be installed-record or source-tree")
		}
		if f, present := build["files"]; present {
			if n, ok := intValue(f); !ok || n < 1 {
				add("build.files must be an integer >= 1")
			}
		}
	}
	if b["assurance"] != SelfDeclared {
		add("assurance must be selfDeclared")
	}
	vs, hasVS := b["vectorSet"]
	if hasVS {
		if m, ok := asObj(vs); !ok {
			add("vectorSet must be an object")
		} else {
			for _, k := range sortedKeys(m) {
				if k != "name" && k != "digest" && k != "cases" {
					add("vectorSet: unknown %s", k)
				}
			}
			if !nonEmptyString(m["name"]) {
				add("vectorSet.name must be a non-empty string")
			}
			if !strictDigest(m["digest"]) {
				add("vectorSet.digest must be exactly {sha256: <64 hex>}")
			}
			if n, ok := intValue(m["cases"]); !ok || n < 1 {
				add("vectorSet.cases must be an integer >= 1")
			}
		}
	}
	if tr, present := b["testResult"]; present {
		if !hasVS {
			add("testResult needs vectorSet")
		}
		if m, ok := asObj(tr); !ok {
			add("testResult must be an object")
		} else {
			for _, k := range sortedKeys(m) {
				if k != "predicateType" && k != "result" && k != "statementDigest" {
					add("testResult: unknown %s", k)
				}
			}
			if m["predicateType"] != TestResultType {
				add("testResult.predicateType must be %s", TestResultType)
			}
			if !oneOf(m["result"], "PASSED", "WARNED", "FAILED") {
				add("testResult.result must be PASSED, WARNED or FAILED")
			}
			if !strictDigest(m["statementDigest"]) {
				add("testResult.statementDigest must be exactly {sha256: <64 hex>}")
			}
		}
	}
	return errs
}

// VerifierBlockReport describes a v0.3 verifier block. A Go verifier cannot re-measure the
// build that wrote it, so MatchesThisVerifier is always NOT_EVALUATED.
type VerifierBlockReport struct {
	Present             bool     `json:"present"`
	Valid               *bool    `json:"valid"`
	Implementation      *string  `json:"implementation"`
	Version             *string  `json:"version"`
	BuildDigest         *string  `json:"build_digest"`
	BuildSource         *string  `json:"build_source"`
	VectorSetDigest     *string  `json:"vector_set_digest"`
	VectorSetCases      *int64   `json:"vector_set_cases"`
	TestResult          *string  `json:"test_result"`
	MatchesThisVerifier string   `json:"matches_this_verifier"`
	Errors              []string `json:"errors"`
}

func verifierBlockReport(pred map[string]any) *VerifierBlockReport {
	r := &VerifierBlockReport{MatchesThisVerifier: MatchNotEvaluated, Errors: []string{}}
	prod, _ := asObj(pred["producer"])
	v, present := prod["verifier"]
	if !present {
		return r
	}
	r.Present = true
	errs := verifierBlockErrors(v)
	valid := len(errs) == 0
	r.Valid = &valid
	r.Errors = append(r.Errors, errs...)
	b, _ := asObj(v)
	str := func(x any) *string {
		if s, ok := x.(string); ok {
			return &s
		}
		return nil
	}
	r.Implementation = str(b["implementation"])
	r.Version = str(b["version"])
	if build, ok := asObj(b["build"]); ok {
		if d, ok := asObj(build["digest"]); ok {
			r.BuildDigest = str(d["sha256"])
		}
		r.BuildSource = str(build["source"])
	}
	if vs, ok := asObj(b["vectorSet"]); ok {
		if d, ok := asObj(vs["digest"]); ok {
			r.VectorSetDigest = str(d["sha256"])
		}
		if n, ok := intValue(vs["cases"]); ok {
			r.VectorSetCases = &n
		}
	}
	if tr, ok := asObj(b["testResult"]); ok {
		r.TestResult = str(tr["result"])
	}
	return r
}
