package digest

import "testing"

func TestSHA256HexAndShort(t *testing.T) {
	if got := SHA256Hex(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("SHA256Hex(nil) = %s", got)
	}
	if got := Short("0123456789abcdef"); got != "0123456789ab" {
		t.Fatalf("Short = %q", got)
	}
	if got := Short("abc"); got != "abc" {
		t.Fatalf("Short of a short string = %q", got)
	}
}
