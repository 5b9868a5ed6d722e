package disclosure

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// EmptyFindingsRoot is the findings root of an empty list: the SHA-256 of no bytes.
const EmptyFindingsRoot = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// SubjectDigest is the hex SHA-256 of the canonical subjectContext.
func SubjectDigest(subjectContext any) (string, error) {
	b, err := jcs.Canonical(subjectContext)
	if err != nil {
		return "", fmt.Errorf("subject digest: %w", err)
	}
	return digest.SHA256Hex(b), nil
}

// SubjectName derives the statement's subject name from a subjectContext; ok is false when no
// name can be derived.
func SubjectName(subjectContext any) (string, bool) {
	sc, isObj := asObj(subjectContext)
	if !isObj {
		return "", false
	}
	if h, ok := sc["humanRef"].(string); ok && h != "" {
		return h, true
	}
	k := "github-issue"
	if sc["kind"] == KindPullRequest {
		k = "github-pr"
	}
	node := ""
	if truthy(sc["pullRequestNodeId"]) {
		node = fmt.Sprint(sc["pullRequestNodeId"])
	} else if truthy(sc["issueNodeId"]) {
		node = fmt.Sprint(sc["issueNodeId"])
	}
	derivable := (sc["kind"] == KindPullRequest || sc["kind"] == KindIssue) && truthy(sc["repositoryId"]) && node != ""
	repo, _ := sc["repositoryId"].(string)
	return k + ":" + repo + ":" + node, derivable
}

// FindingsRoot hashes each finding's canonical form, sorts the hex leaves and hashes their
// concatenation; the result does not depend on list order.
func FindingsRoot(findings []any) (string, error) {
	leaves := make([][64]byte, len(findings))
	buf := make([]byte, 0, 256)
	for i, f := range findings {
		var err error
		buf, err = jcs.AppendCanonical(buf[:0], f)
		if err != nil {
			return "", fmt.Errorf("findings[%d]: %w", i, err)
		}
		sum := sha256.Sum256(buf)
		hex.Encode(leaves[i][:], sum[:])
	}
	return rootOfLeaves(leaves), nil
}

// findingsRootOfCanonical is FindingsRoot over findings given as their canonical bytes (spans
// of a canonical payload), so a verifier does not serialise them again.
func findingsRootOfCanonical(findings [][]byte) string {
	leaves := make([][64]byte, len(findings))
	for i, f := range findings {
		sum := sha256.Sum256(f)
		hex.Encode(leaves[i][:], sum[:])
	}
	return rootOfLeaves(leaves)
}

func rootOfLeaves(leaves [][64]byte) string {
	slices.SortFunc(leaves, func(a, b [64]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for i := range leaves {
		h.Write(leaves[i][:])
	}
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h.Sum(sum[:0]))
	return string(out[:])
}

// assuranceValues lists the assurance members of authoring and reviewRuns object items;
// absent members are skipped (only string rungs count).
func assuranceValues(pred map[string]any) []any {
	d, _ := asObj(pred["declaration"])
	var out []any
	for _, k := range []string{"authoring", "reviewRuns"} {
		list, _ := asArr(d[k])
		for _, e := range list {
			if m, ok := asObj(e); ok {
				if a, present := m["assurance"]; present {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// LimitationCodes derives the sorted limitation codes of a predicate. These are the codes the
// policy uses; a signed limitationCodes list is only checked for form.
func LimitationCodes(pred any) []string {
	p, ok := asObj(pred)
	if !ok {
		return []string{LimitNotQualityAttestation}
	}
	unbound := true
	for _, a := range assuranceValues(p) {
		if s, ok := a.(string); ok && s != SelfDeclared {
			unbound = false
		}
	}
	obs, ok := asArr(p["observations"])
	cov, _ := asObj(p["coverage"])
	return limitationCodesOf(unbound, !ok || len(obs) == 0, cov["status"])
}

// limitationCodesOf derives the sorted limitation codes from what they depend on: whether no
// assurance rises above selfDeclared, whether there are no observations, and the coverage
// status.
func limitationCodesOf(unbound, noObservations bool, coverageStatus any) []string {
	codes := make([]string, 0, 5)
	codes = append(codes, LimitNotQualityAttestation, LimitCurrentnessUnknown)
	if unbound {
		codes = append(codes, LimitIdentityUnbound)
	}
	if noObservations {
		codes = append(codes, LimitTimeSelfDeclared)
	}
	if coverageStatus == CoveragePartial || coverageStatus == CoverageUnknown {
		codes = append(codes, LimitCoveragePartial)
	}
	slices.Sort(codes)
	return codes
}

// weakestRung is the weakest assurance among authoring and reviewRuns, selfDeclared by default.
func weakestRung(pred map[string]any) string {
	vals := assuranceValues(pred)
	for _, r := range rungs {
		for _, v := range vals {
			if v == r {
				return r
			}
		}
	}
	return SelfDeclared
}

// TimeAxes are the four time states of a v0.2/v0.3 receipt.
type TimeAxes struct {
	Event, Observation, Signature, External string
}

func timeAxes(p map[string]any) TimeAxes {
	ax := TimeAxes{Event: TimeAbsent, Observation: TimeAbsent, Signature: TimeAbsent, External: TimeNotEvaluated}
	d, _ := asObj(p["declaration"])
	claims, _ := asArr(d["timeClaims"])
	var completed []any
	for _, c := range claims {
		if m, ok := asObj(c); ok && m["kind"] == "reviewCompleted" {
			completed = append(completed, m["value"])
		}
	}
	if len(completed) > 0 {
		ax.Event = TimeSelfDeclared
		for _, v := range completed[1:] {
			if !jsonEqual(v, completed[0]) {
				ax.Event = TimeConflict
			}
		}
	}
	times, _ := asObj(p["times"])
	obs, _ := asArr(p["observations"])
	named := false
	switch {
	case len(obs) > 0:
		ax.Observation = TimeSelfDeclared
		for _, o := range obs {
			om, _ := asObj(o)
			if who, ok := asObj(om["observer"]); ok && truthy(who["id"]) {
				ax.Observation, named = TimeRunnerObserved, true
			}
		}
	case times["observedAt"] != nil:
		ax.Observation = TimeSelfDeclared
	}
	// An observation before the claimed completion contradicts it. Unreachable while
	// observations must be empty, but kept so the rule holds once witnesses exist.
	if ax.Event == TimeSelfDeclared && named {
		if done, ok := instant(completed[0]); ok {
			for _, o := range obs {
				om, _ := asObj(o)
				if at, ok := instant(om["observedAt"]); ok && at.Before(done) {
					ax.Event, ax.Observation = TimeConflict, TimeConflict
				}
			}
		}
	}
	if truthy(times["signedAt"]) {
		ax.Signature = TimeSelfDeclared
	}
	return ax
}

func instant(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func jsonEqual(a, b any) bool {
	x, err1 := jcs.Canonical(a)
	y, err2 := jcs.Canonical(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// buildStatement wraps a predicate in an in-toto Statement v1 with the derived subject.
func buildStatement(pred map[string]any, v Version) (map[string]any, string, error) {
	sc, ok := asObj(pred["subjectContext"])
	if !ok {
		return nil, "", errors.New("subjectContext must be an object")
	}
	digest, err := SubjectDigest(sc)
	if err != nil {
		return nil, "", err
	}
	name, ok := SubjectName(sc)
	if !ok {
		return nil, "", errors.New("no subject name can be derived from subjectContext")
	}
	return map[string]any{
		"_type":         StatementType,
		"predicateType": v.PredicateType(),
		"predicate":     pred,
		"subject": []any{map[string]any{
			"digest": map[string]any{"sha256": digest},
			"name":   name,
		}},
	}, digest, nil
}

// shapeCheck validates the statement around the predicate and returns its coded findings.
func shapeCheck(st any) issues {
	var is issues
	s, ok := asObj(st)
	if !ok {
		is.add(CodeStatementNotObject, "statement is not an object")
		return is
	}
	if t, present := s["_type"]; !present {
		is.add(CodeStatementTypeAbsent, "statement has no _type")
	} else if t != StatementType {
		is.add(CodeStatementTypeMismatch, "statement _type is not %s", StatementType)
	}
	subj, present := s["subject"]
	list, isArr := asArr(subj)
	switch {
	case !present:
		is.add(CodeSubjectAbsentField, "statement has no subject")
		return is
	case !isArr:
		is.add(CodeSubjectNotArray, "subject is not an array")
		return is
	case len(list) == 0:
		is.add(CodeSubjectAbsent, "subject is empty")
		return is
	case len(list) > 1:
		is.add(CodeSubjectCardinality, "more than one subject")
		return is
	}
	entry, ok := asObj(list[0])
	if !ok {
		is.add(CodeSubjectEntryNotObject, "subject[0] is not an object")
		return is
	}
	if dv, present := entry["digest"]; !present {
		is.add(CodeSubjectDigestAbsent, "subject has no digest")
	} else if d, ok := asObj(dv); !ok {
		is.add(CodeSubjectDigestNotObject, "subject digest is not an object")
	} else if len(d) == 0 {
		is.add(CodeSubjectDigestEmpty, "subject digest is empty")
	} else if h, present := d["sha256"]; !present {
		is.add(CodeSubjectDigestSHA256Absent, "subject digest has no sha256")
	} else {
		if len(d) > 1 {
			is.add(CodeSubjectDigestExtra, "subject digest carries other algorithms")
		}
		if !isLowerHex(64, 64, h) {
			is.add(CodeSubjectDigestForm, "subject sha256 is not 64 lowercase hex")
		}
	}
	nameV, present := entry["name"]
	name, isStr := nameV.(string)
	pred, predObj := asObj(s["predicate"])
	switch {
	case !present:
		is.add(CodeSubjectNameAbsent, "subject has no name")
	case nameV == nil:
		is.add(CodeSubjectNameNull, "subject name is null")
	case !isStr:
		is.add(CodeSubjectNameNotString, "subject name is not a string")
	case name == "":
		is.add(CodeSubjectNameEmpty, "subject name is empty")
	case predObj:
		derived, ok := SubjectName(pred["subjectContext"])
		if !ok {
			is.add(CodeSubjectNameUnderivable, "no subject name can be derived from subjectContext")
		} else if derived != name {
			is.add(CodeSubjectNameDisagrees, "subject name %q disagrees with the derived %q", name, derived)
		}
	}
	for _, k := range sortedKeys(s) {
		switch k {
		case "_type", "subject", "predicateType", "predicate":
		default:
			is.add(CodeUnknownStatementField, "unknown statement field %q", k)
		}
	}
	return is
}
