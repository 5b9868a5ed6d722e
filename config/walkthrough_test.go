package config

import "testing"

// TestWalkthroughAndAskKeys: both are on by default, the switches turn them off, and a rate
// limit out of range is a problem with its line.
func TestWalkthroughAndAskKeys(t *testing.T) {
	def, err := ParseRepo(".asdd.yml", []byte("runtime: builtin\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !def.Walkthrough.Enabled || !def.Ask.Enabled || def.Ask.PerUserPerHour != DefaultAskPerUserPerHour {
		t.Fatalf("defaults: %+v %+v", def.Walkthrough, def.Ask)
	}
	off, err := ParseRepo(".asdd.yml", []byte("walkthrough:\n  enabled: false\nask:\n  enabled: false\n  per_user_per_hour: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if off.Walkthrough.Enabled || off.Ask.Enabled || off.Ask.PerUserPerHour != 2 {
		t.Fatalf("switched off: %+v %+v", off.Walkthrough, off.Ask)
	}
	if _, probs := CheckRepo(".asdd.yml", []byte("ask:\n  per_user_per_hour: 0\n")); len(probs) != 1 || probs[0].Line != 2 {
		t.Fatalf("problems %v", probs)
	}
}
