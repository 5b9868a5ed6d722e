package disclosure

import (
	"slices"
	"strings"
	"testing"
)

// TestStatementShapeCodes re-signs statements with one shape fault each and checks the code.
func TestStatementShapeCodes(t *testing.T) {
	d, base := disclosed(t)
	base.Body = nil
	subject := func(st map[string]any) map[string]any { return st["subject"].([]any)[0].(map[string]any) }
	tests := []struct {
		code string
		edit func(st map[string]any)
	}{
		{CodeStatementTypeAbsent, func(st map[string]any) { delete(st, "_type") }},
		{CodeStatementTypeMismatch, func(st map[string]any) { st["_type"] = nil }},
		{CodeSubjectAbsentField, func(st map[string]any) { delete(st, "subject") }},
		{CodeSubjectNotArray, func(st map[string]any) { st["subject"] = map[string]any{} }},
		{CodeSubjectAbsent, func(st map[string]any) { st["subject"] = []any{} }},
		{CodeSubjectCardinality, func(st map[string]any) { st["subject"] = append(st["subject"].([]any), subject(st)) }},
		{CodeSubjectEntryNotObject, func(st map[string]any) { st["subject"] = []any{"x"} }},
		{CodeSubjectDigestAbsent, func(st map[string]any) { delete(subject(st), "digest") }},
		{CodeSubjectDigestNotObject, func(st map[string]any) { subject(st)["digest"] = "x" }},
		{CodeSubjectDigestEmpty, func(st map[string]any) { subject(st)["digest"] = map[string]any{} }},
		{CodeSubjectDigestSHA256Absent, func(st map[string]any) { subject(st)["digest"] = map[string]any{"sha512": "x"} }},
		{CodeSubjectDigestExtra, func(st map[string]any) { subject(st)["digest"].(map[string]any)["sha1"] = "x" }},
		{CodeSubjectDigestForm, func(st map[string]any) { subject(st)["digest"] = map[string]any{"sha256": strings.Repeat("A", 64)} }},
		{CodeSubjectNameAbsent, func(st map[string]any) { delete(subject(st), "name") }},
		{CodeSubjectNameNull, func(st map[string]any) { subject(st)["name"] = nil }},
		{CodeSubjectNameNotString, func(st map[string]any) { subject(st)["name"] = true }},
		{CodeSubjectNameEmpty, func(st map[string]any) { subject(st)["name"] = "" }},
		{CodeSubjectNameDisagrees, func(st map[string]any) { subject(st)["name"] = "github-pr:other/repo#1" }},
		{CodeSubjectNameUnderivable, func(st map[string]any) {
			sc := st["predicate"].(map[string]any)["subjectContext"].(map[string]any)
			delete(sc, "humanRef")
			sc["repositoryId"] = ""
		}},
		{CodeUnknownStatementField, func(st map[string]any) { st["comment"] = "x" }},
		{CodeSubjectContextNotObject, func(st map[string]any) { st["predicate"].(map[string]any)["subjectContext"] = "x" }},
		{CodeDeclarationNotObject, func(st map[string]any) { st["predicate"].(map[string]any)["declaration"] = []any{} }},
		{CodeCoverageNotObject, func(st map[string]any) { st["predicate"].(map[string]any)["coverage"] = nil }},
		{CodeTimesNotObject, func(st map[string]any) { st["predicate"].(map[string]any)["times"] = "now" }},
		{CodeSupersessionNotObject, func(st map[string]any) { st["predicate"].(map[string]any)["supersession"] = []any{} }},
		{CodeFindingsRootMalformed, func(st map[string]any) {
			st["predicate"].(map[string]any)["declaration"].(map[string]any)["findingsRoot"] = "sha256:x"
		}},
		{CodeFindingsEntryNotObject, func(st map[string]any) {
			d := st["predicate"].(map[string]any)["declaration"].(map[string]any)
			d["findings"] = append(d["findings"].([]any), "x")
		}},
		{CodeUnknownPredicateVersion, func(st map[string]any) { st["predicateType"] = V03.PredicateType() }},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			env := resign(t, d.Receipt.Envelope, tt.edit)
			r := VerifyVersion(V02, env, base)
			if r.OK || !isFalse(r.StructureOK) || !slices.Contains(r.ReasonCodes, tt.code) {
				t.Fatalf("ok=%v structure=%v codes=%v errors=%v", r.OK, r.StructureOK, r.ReasonCodes, r.Errors)
			}
			if !isTrue(r.CryptoOK) {
				t.Fatal("re-signed statement failed the signature axis")
			}
		})
	}
}
