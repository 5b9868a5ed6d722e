package durable

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A job at its installation's bound is snoozed 1 s, doubling per snooze up to 15 s, ±20 %.
func TestSnoozeAtTheInstallationBound(t *testing.T) {
	tests := []struct {
		metadata string
		want     time.Duration
	}{
		{`{}`, time.Second},
		{`{"snoozes": 1}`, 2 * time.Second},
		{`{"snoozes": 3}`, 8 * time.Second},
		{`{"snoozes": 40}`, 15 * time.Second},
		{`not json`, time.Second},
	}
	for _, tt := range tests {
		for range 20 {
			d := snoozeFor(&rivertype.JobRow{Metadata: []byte(tt.metadata)})
			if lo, hi := tt.want*8/10, tt.want*12/10; d < lo || d > hi {
				t.Errorf("metadata %s: snooze %v, want %v ±20 %%", tt.metadata, d, tt.want)
			}
		}
	}
}

// The bound counts this replica's running jobs per installation; installation 0 is not bounded.
func TestInstallationCap(t *testing.T) {
	c := newInstallationCap(0, 3) // default: 2 of 3 workers
	l1, ok1 := c.enter(7)
	_, ok2 := c.enter(7)
	if _, ok := c.enter(7); !ok1 || !ok2 || ok {
		t.Fatalf("enter = %v %v %v, want two in and the third out", ok1, ok2, ok)
	}
	if _, ok := c.enter(8); !ok {
		t.Fatal("another installation is held back")
	}
	l1()
	if _, ok := c.enter(7); !ok {
		t.Fatal("a job that left does not free its place")
	}
	for range 5 {
		if _, ok := c.enter(0); !ok {
			t.Fatal("a job of no installation is bounded")
		}
	}
	if _, ok := newInstallationCap(-1, 1).enter(7); !ok {
		t.Fatal("a negative bound bounds")
	}
}
