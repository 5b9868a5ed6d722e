package disclosure

import "fmt"

// cap1Finding is one violated rule of the CAP-1 coverage profile.
type cap1Finding struct {
	rule, code, text string
}

var (
	cap1Dispositions = []string{"not_applicable", "disabled_by_policy", "unsupported_input",
		"resource_exhausted", "failed", "unavailable", "out_of_scope", "withheld"}
	cap1Incomplete = map[string]bool{"failed": true, "resource_exhausted": true, "unavailable": true}
)

// cap1Check runs rules R0, R5, R1, R2, R3, R4, R6, R7, R8 (in that order) over the coverage's
// CAP-1 members and returns every violation.
func cap1Check(strataV, integrityV, absenceV any) []cap1Finding {
	var out []cap1Finding
	add := func(rule, code, format string, args ...any) {
		out = append(out, cap1Finding{rule, code, fmt.Sprintf(format, args...)})
	}
	strata, strataOK := asArr(strataV)
	var objs []map[string]any
	ids := map[string]bool{}

	// R0: shape.
	if !strataOK || len(strata) == 0 {
		add("R0", CodeCap1Shape, "strata must be a non-empty array")
	}
	for i, s := range strata {
		m, ok := asObj(s)
		if !ok {
			add("R0", CodeCap1Shape, "strata[%d] must be an object", i)
			continue
		}
		objs = append(objs, m)
		id, _ := m["id"].(string)
		if id == "" {
			add("R0", CodeCap1Shape, "strata[%d] needs a non-empty id", i)
			continue
		}
		if ids[id] {
			add("R0", CodeCap1Shape, "stratum id %q is not unique", id)
		}
		ids[id] = true
	}
	integrity, integOK := asObj(integrityV)
	complete, completeOK := integrity["complete"].(bool)
	if !integOK || !completeOK {
		add("R0", CodeCap1Shape, "integrity must be an object with a boolean complete")
	}

	// R5: counts.
	for _, m := range objs {
		el, eok := intValue(m["eligible"])
		ex, xok := intValue(m["examined"])
		if !eok || !xok || el < 0 || ex < 0 {
			add("R5", CodeCap1CountsMalformed, "stratum %v: eligible and examined must be integers >= 0", m["id"])
		} else if ex > el {
			add("R5", CodeCap1CountsMalformed, "stratum %v: examined exceeds eligible", m["id"])
		}
	}
	// R1: no silent remainder.
	for _, m := range objs {
		un, ok := asArr(m["unexamined"])
		if !ok {
			add("R1", CodeCap1SilentRemainder, "stratum %v: unexamined must be an array", m["id"])
			continue
		}
		el, eok := intValue(m["eligible"])
		ex, xok := intValue(m["examined"])
		if eok && xok && el != ex+int64(len(un)) {
			add("R1", CodeCap1SilentRemainder, "stratum %v: eligible != examined + unexamined", m["id"])
		}
	}
	// R2 and R3: closed dispositions, withheld units carry a digest.
	var units []map[string]any
	for _, m := range objs {
		un, _ := asArr(m["unexamined"])
		for j, u := range un {
			um, ok := asObj(u)
			if !ok {
				add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] must be an object", m["id"], j)
				continue
			}
			units = append(units, um)
			if !nonEmptyString(um["unit"]) {
				add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] needs a unit", m["id"], j)
			}
			if !oneOf(um["disposition"], cap1Dispositions...) {
				add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] has an unknown disposition", m["id"], j)
			}
		}
	}
	for _, um := range units {
		if um["disposition"] == "withheld" && !isLowerHex(32, 128, um["withheld_digest"]) {
			add("R3", CodeCap1WithheldWithoutDigest, "withheld unit %v needs withheld_digest", um["unit"])
		}
	}
	// R4: basis.
	for _, m := range objs {
		b, ok := asObj(m["basis"])
		switch {
		case !ok:
			add("R4", CodeCap1BasisMissing, "stratum %v: basis must be an object", m["id"])
		case b["kind"] == "catalogue":
			if !isLowerHex(32, 128, b["catalogue_digest"]) {
				add("R4", CodeCap1BasisMissing, "stratum %v: catalogue basis needs catalogue_digest", m["id"])
			}
		case b["kind"] == "enumeration":
			if !nonEmptyString(b["enumeration_method"]) {
				add("R4", CodeCap1BasisMissing, "stratum %v: enumeration basis needs enumeration_method", m["id"])
			}
		case b["kind"] == "declared":
		default:
			add("R4", CodeCap1BasisMissing, "stratum %v: basis.kind must be catalogue, enumeration or declared", m["id"])
		}
	}
	// R6: absence assertions name existing strata.
	var cited []string
	if absenceV != nil {
		list, ok := asArr(absenceV)
		if !ok {
			add("R6", CodeCap1AbsenceUnscoped, "absence_assertions must be an array")
		}
		for i, a := range list {
			am, ok := asObj(a)
			if !ok {
				add("R6", CodeCap1AbsenceUnscoped, "absence_assertions[%d] must be an object", i)
				continue
			}
			s, _ := am["stratum"].(string)
			if s == "" || !ids[s] {
				add("R6", CodeCap1AbsenceUnscoped, "absence_assertions[%d] must name an existing stratum", i)
				continue
			}
			cited = append(cited, s)
		}
	}
	// R7: an incomplete examination is not claimed clean.
	if completeOK && complete {
		for _, um := range units {
			if d, _ := um["disposition"].(string); cap1Incomplete[d] {
				add("R7", CodeCap1IncompleteClaimedClean, "unit %v is %s while integrity.complete is true", um["unit"], d)
			}
		}
	}
	if completeOK && !complete && !nonEmptyString(integrity["capped_to"]) {
		add("R7", CodeCap1IncompleteClaimedClean, "integrity.complete is false without capped_to")
	}
	// R8: a cited stratum supports its absence assertion.
	for _, s := range cited {
		for _, m := range objs {
			if m["id"] == s {
				if sup, ok := asArr(m["supports"]); !ok || len(sup) == 0 {
					add("R8", CodeCap1SupportsMissing, "stratum %s is cited by an absence assertion without supports", s)
				}
			}
		}
	}
	return out
}
