package details

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/lensgate/lensgate/review/pdp"
)

// FillLedgerForTest writes a chained ledger of about size bytes of decisions on pull requests
// 100 to 599 of repo.
func FillLedgerForTest(t testing.TB, path, repo string, size int) {
	t.Helper()
	var buf []byte
	prev := pdp.Genesis
	for i := 0; len(buf) < size; i++ {
		r := pdp.Record{Schema: pdp.AuditSchema, Kind: "decision", TS: "2026-12-01T12:00:00Z", Action: "check_run.update",
			Agent: pdp.Agent{Identity: "lensgate", Role: "reviewer"}, AgentID: "lensgate",
			Target:  pdp.Target{Repo: repo, PR: 100 + i%500, Commit: fmt.Sprintf("%040x", i)},
			Outcome: pdp.Verdict{Verdict: "allow", ActionTaken: "performed"}, Reasoning: "the gate check run of the reviewed head",
			Payload: pdp.Payload{Source: "review", Lenses: []string{"correctness", "security"}, Seq: i, Actions: 3, Writes: 3}, Prev: prev}
		h, err := pdp.RecordHash(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Hash, r.EventID = h, h[len("sha256:"):len("sha256:")+32]
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(append(buf, line...), '\n')
		prev = h
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
}
