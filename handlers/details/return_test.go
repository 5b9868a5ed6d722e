package details

import "testing"

// TestSafeReturnStaysUnderDetails: the login returns only to a clean path under /details/.
func TestSafeReturnStaysUnderDetails(t *testing.T) {
	for _, p := range []string{
		"/details/../api/github/logout", "/details/o/../../metrics", "/details/./o/r/1", "/details//evil.example",
		"/details/o/r/1\r\nSet-Cookie: x=y", "/details/o/r/1\x00", "/details/o/r/1\t", "/details/o/r/1\x7f",
		"/details/%2e%2e/api", `/details/o\..\x`, "/detailsx/o/r/1", "https://evil.example/details/o/r/1", "",
	} {
		if got := safeReturn(p); got != "" {
			t.Errorf("safeReturn(%q) = %q, want it refused", p, got)
		}
	}
	for _, p := range []string{"/details/o/r/1", "/details/Codertocat/Hello-World/2/" + "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "/details/a.b/c_d-e/3"} {
		if got := safeReturn(p); got != p {
			t.Errorf("safeReturn(%q) = %q, want it kept", p, got)
		}
	}
}
