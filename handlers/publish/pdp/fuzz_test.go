package pdp

import (
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/block"
)

// Splicing the block into any body is allowed; changing any one byte outside the block after
// that is not.
func FuzzDisclosureOnly(f *testing.F) {
	f.Add("Fixes the parser.\r\n", uint(3), byte('x'))
	f.Add("", uint(0), byte('\n'))
	f.Add("text\n\n<!-- proofbundle:agent-review:begin -->\nold\n<!-- proofbundle:agent-review:end -->\ntail", uint(40), byte('y'))
	blk := block.Begin + "\n- **Involvement:** fuzz\n" + block.End
	f.Fuzz(func(t *testing.T, body string, pos uint, c byte) {
		after, err := block.Splice(body, blk)
		if err != nil {
			return // an ambiguous body is refused before any PDP question
		}
		if reason, ok := disclosureOnly(body, after); !ok {
			t.Fatalf("splice denied: %s", reason)
		}
		s := strings.Index(after, block.Begin)
		e := strings.Index(after, block.End) + len(block.End)
		outside := len(after) - (e - s)
		if outside == 0 {
			return
		}
		i := int(pos % uint(outside))
		if i >= s {
			i += e - s
		}
		if after[i] == c {
			c++
		}
		mutated := after[:i] + string([]byte{c}) + after[i+1:]
		if reason, ok := disclosureOnly(body, mutated); ok {
			t.Fatalf("edit at %d outside the block allowed (%s)", i, reason)
		}
	})
}
