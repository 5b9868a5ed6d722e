package disclosure

import "testing"

func TestTypedPathTakesTheTypicalReceipt(t *testing.T) {
	d, opts := disclosed(t)
	opts.Body = nil
	if r := verifyTyped(d.Receipt.Envelope, opts); r == nil {
		t.Fatal("typed path refused the typical receipt")
	}
}
