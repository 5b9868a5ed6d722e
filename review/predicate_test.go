package review

import "testing"

// A dismissal in the receipt names who dismissed the finding and why.
func TestReceiptFindingNamesWhoDismissed(t *testing.T) {
	f := Finding{ID: "LG-0123456789ab", Severity: SeverityHigh, Disposition: DispositionDismissed, Reason: "constant input", DismissedBy: "maintainer"}
	got := ReceiptFinding(f, "title")
	if got.Disposition != DispositionDismissed || got.Reason != "dismissed by github:maintainer: constant input" {
		t.Fatalf("receipt finding %+v", got)
	}
	f.DismissedBy = ""
	if got := ReceiptFinding(f, "title"); got.Reason != "constant input" {
		t.Fatalf("receipt finding without a dismisser %+v", got)
	}
}
