package deploy

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/review/pdp"
)

// A crash in the middle of an audit append leaves a torn last line. The binary keeps it in a
// file of its own, names that file in its log, continues the chain from the last whole record
// and publishes, instead of refusing to start.
func TestTornAuditLineIsSetAside(t *testing.T) {
	fe := newFakeEnv(t)
	ledger := fe.vars["LENSGATE_AUDIT_FILE"]
	sink, err := pdp.OpenFileSink(ledger)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := sink.Append(context.Background(), pdp.Record{Schema: pdp.AuditSchema, Kind: "decision", TS: time.Now().UTC().Format(time.RFC3339),
			Action: "comment.upsert", RunID: "before-the-crash", Reasoning: strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = sink.Close()
	torn := `{"schema":"asdd/audit/v0.1","kind":"decision","ts":"2026-12-01T`
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(torn)
	_ = f.Close()

	s := startServe(t, fe.vars)
	reviewFixturePR(t, s, fe.gh)
	s.stop()

	lf, err := os.Open(ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	res, err := pdp.Verify(lf)
	if err != nil || res.Records <= 2 {
		t.Fatalf("ledger after the restart: %d records, %v", res.Records, err)
	}
	logs := s.logs.String()
	i := strings.Index(logs, `"set_aside":"`)
	if i < 0 {
		t.Fatalf("the log does not name the set-aside file:\n%s", logs)
	}
	aside := logs[i+len(`"set_aside":"`):]
	aside = aside[:strings.IndexByte(aside, '"')]
	if b, err := os.ReadFile(aside); err != nil || string(b) != torn {
		t.Fatalf("set-aside file %s holds %q (%v), want the torn line", aside, b, err)
	}
	checkLogs(t, logs, fe.vars)
}
