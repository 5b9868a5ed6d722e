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
	c := &cap1{ids: map[string]bool{}}
	c.shape(strataV, integrityV) // R0
	c.counts()                   // R5
	c.remainder()                // R1
	c.dispositions()             // R2, R3
	c.basis()                    // R4
	c.absence(absenceV)          // R6
	c.incomplete()               // R7
	c.supports()                 // R8
	return c.out
}

// cap1 is one CAP-1 check: what the rules read so far and the violations found.
type cap1 struct {
	out        []cap1Finding
	objs       []map[string]any // the strata that are objects
	ids        map[string]bool  // their ids
	units      []map[string]any // their unexamined units that are objects
	cited      []string         // the strata absence assertions name
	integrity  map[string]any
	complete   bool
	completeOK bool
}

func (c *cap1) add(rule, code, format string, args ...any) {
	c.out = append(c.out, cap1Finding{rule, code, fmt.Sprintf(format, args...)})
}

// shape is R0: a non-empty array of strata with unique ids, and integrity.complete.
func (c *cap1) shape(strataV, integrityV any) {
	strata, strataOK := asArr(strataV)
	if !strataOK || len(strata) == 0 {
		c.add("R0", CodeCap1Shape, "strata must be a non-empty array")
	}
	for i, s := range strata {
		m, ok := asObj(s)
		if !ok {
			c.add("R0", CodeCap1Shape, "strata[%d] must be an object", i)
			continue
		}
		c.objs = append(c.objs, m)
		id, _ := m["id"].(string)
		if id == "" {
			c.add("R0", CodeCap1Shape, "strata[%d] needs a non-empty id", i)
			continue
		}
		if c.ids[id] {
			c.add("R0", CodeCap1Shape, "stratum id %q is not unique", id)
		}
		c.ids[id] = true
	}
	var integOK bool
	c.integrity, integOK = asObj(integrityV)
	c.complete, c.completeOK = c.integrity["complete"].(bool)
	if !integOK || !c.completeOK {
		c.add("R0", CodeCap1Shape, "integrity must be an object with a boolean complete")
	}
}

// counts is R5: eligible and examined are counts, examined no more than eligible.
func (c *cap1) counts() {
	for _, m := range c.objs {
		el, eok := intValue(m["eligible"])
		ex, xok := intValue(m["examined"])
		if !eok || !xok || el < 0 || ex < 0 {
			c.add("R5", CodeCap1CountsMalformed, "stratum %v: eligible and examined must be integers >= 0", m["id"])
		} else if ex > el {
			c.add("R5", CodeCap1CountsMalformed, "stratum %v: examined exceeds eligible", m["id"])
		}
	}
}

// remainder is R1: no silent remainder, every eligible unit examined or listed.
func (c *cap1) remainder() {
	for _, m := range c.objs {
		un, ok := asArr(m["unexamined"])
		if !ok {
			c.add("R1", CodeCap1SilentRemainder, "stratum %v: unexamined must be an array", m["id"])
			continue
		}
		el, eok := intValue(m["eligible"])
		ex, xok := intValue(m["examined"])
		if eok && xok && el != ex+int64(len(un)) {
			c.add("R1", CodeCap1SilentRemainder, "stratum %v: eligible != examined + unexamined", m["id"])
		}
	}
}

// dispositions is R2 and R3: closed dispositions, and withheld units carry a digest.
func (c *cap1) dispositions() {
	for _, m := range c.objs {
		un, _ := asArr(m["unexamined"])
		for j, u := range un {
			um, ok := asObj(u)
			if !ok {
				c.add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] must be an object", m["id"], j)
				continue
			}
			c.units = append(c.units, um)
			if !nonEmptyString(um["unit"]) {
				c.add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] needs a unit", m["id"], j)
			}
			if !oneOf(um["disposition"], cap1Dispositions...) {
				c.add("R2", CodeCap1DispositionNotClosed, "stratum %v: unexamined[%d] has an unknown disposition", m["id"], j)
			}
		}
	}
	for _, um := range c.units {
		if um["disposition"] == "withheld" && !isLowerHex(32, 128, um["withheld_digest"]) {
			c.add("R3", CodeCap1WithheldWithoutDigest, "withheld unit %v needs withheld_digest", um["unit"])
		}
	}
}

// basis is R4: every stratum says what its eligible count is based on.
func (c *cap1) basis() {
	for _, m := range c.objs {
		b, ok := asObj(m["basis"])
		switch {
		case !ok:
			c.add("R4", CodeCap1BasisMissing, "stratum %v: basis must be an object", m["id"])
		case b["kind"] == "catalogue":
			if !isLowerHex(32, 128, b["catalogue_digest"]) {
				c.add("R4", CodeCap1BasisMissing, "stratum %v: catalogue basis needs catalogue_digest", m["id"])
			}
		case b["kind"] == "enumeration":
			if !nonEmptyString(b["enumeration_method"]) {
				c.add("R4", CodeCap1BasisMissing, "stratum %v: enumeration basis needs enumeration_method", m["id"])
			}
		case b["kind"] == "declared":
		default:
			c.add("R4", CodeCap1BasisMissing, "stratum %v: basis.kind must be catalogue, enumeration or declared", m["id"])
		}
	}
}

// absence is R6: absence assertions name existing strata.
func (c *cap1) absence(absenceV any) {
	if absenceV == nil {
		return
	}
	list, ok := asArr(absenceV)
	if !ok {
		c.add("R6", CodeCap1AbsenceUnscoped, "absence_assertions must be an array")
	}
	for i, a := range list {
		am, ok := asObj(a)
		if !ok {
			c.add("R6", CodeCap1AbsenceUnscoped, "absence_assertions[%d] must be an object", i)
			continue
		}
		s, _ := am["stratum"].(string)
		if s == "" || !c.ids[s] {
			c.add("R6", CodeCap1AbsenceUnscoped, "absence_assertions[%d] must name an existing stratum", i)
			continue
		}
		c.cited = append(c.cited, s)
	}
}

// incomplete is R7: an incomplete examination is not claimed clean.
func (c *cap1) incomplete() {
	if c.completeOK && c.complete {
		for _, um := range c.units {
			if d, _ := um["disposition"].(string); cap1Incomplete[d] {
				c.add("R7", CodeCap1IncompleteClaimedClean, "unit %v is %s while integrity.complete is true", um["unit"], d)
			}
		}
	}
	if c.completeOK && !c.complete && !nonEmptyString(c.integrity["capped_to"]) {
		c.add("R7", CodeCap1IncompleteClaimedClean, "integrity.complete is false without capped_to")
	}
}

// supports is R8: a cited stratum supports its absence assertion.
func (c *cap1) supports() {
	for _, s := range c.cited {
		for _, m := range c.objs {
			if m["id"] == s {
				if sup, ok := asArr(m["supports"]); !ok || len(sup) == 0 {
					c.add("R8", CodeCap1SupportsMissing, "stratum %s is cited by an absence assertion without supports", s)
				}
			}
		}
	}
}
