package catchup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/internal/githubfake"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func appClient(t *testing.T, s *githubfake.Server) *github.Client {
	t.Helper()
	c, err := s.ClientCreator(t).NewAppClient()
	if err != nil {
		t.Fatalf("app client: %v", err)
	}
	return c
}

func add(s *githubfake.Server, guid string, status int, ago time.Duration, redelivery bool) githubfake.HookDelivery {
	return s.AddHookDelivery(githubfake.HookDelivery{
		GUID: guid, Event: "pull_request", Action: "synchronize", StatusCode: status,
		DeliveredAt: now.Add(-ago), Redelivery: redelivery,
	})
}

func TestRedeliverFailedOnly(t *testing.T) {
	s := githubfake.New(t)
	failed := add(s, "g-failed", 502, time.Hour, false)
	add(s, "g-recovered", 500, 2*time.Hour, false)
	add(s, "g-recovered", 200, 90*time.Minute, true)
	add(s, "g-ok", 200, 3*time.Hour, false)
	add(s, "g-twice", 503, 4*time.Hour, false)
	retried := add(s, "g-twice", 504, 3*time.Hour, true)
	for i := range 4 {
		add(s, "g-hopeless", 400, time.Duration(5+i)*time.Hour, i > 0)
	}
	add(s, "g-old", 502, 30*time.Hour, false)

	r := New(Options{Now: func() time.Time { return now }})
	res, err := r.Run(context.Background(), appClient(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"g-failed", "g-twice"}; !slices.Equal(res.Redelivered, want) {
		t.Fatalf("redelivered %v, want %v", res.Redelivered, want)
	}
	// The newest attempt of each delivery is the one redelivered.
	if got, want := s.Redeliveries(), []int64{failed.ID, retried.ID}; !slices.Equal(got, want) {
		t.Fatalf("redelivery ids %v, want %v", got, want)
	}
	if res.Scanned != 10 || res.Failed != 3 || res.Skipped != 1 {
		t.Fatalf("result = %+v, want 10 scanned (the 30h-old one is outside the window), 3 failed, 1 skipped", res)
	}

	// Run again at once: nothing is asked for twice.
	res, err = r.Run(context.Background(), appClient(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Redelivered) != 0 || len(s.Redeliveries()) != 2 {
		t.Fatalf("second run redelivered %v (total %d)", res.Redelivered, len(s.Redeliveries()))
	}

	// Another replica after GitHub listed the successful redeliveries: nothing to do either.
	add(s, "g-failed", 200, 10*time.Minute, true)
	add(s, "g-twice", 200, 10*time.Minute, true)
	res, err = Redeliver(context.Background(), appClient(t, s), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Redelivered) != 0 || res.Failed != 1 {
		t.Fatalf("other replica: %+v, want nothing redelivered and only the hopeless delivery failed", res)
	}
}

func TestRedeliverBounded(t *testing.T) {
	cases := []struct {
		name                     string
		deliveries               int
		pages, max               int
		wantScanned, wantRedeliv int
		wantFailed, wantSkipped  int
	}{
		{"run limit", 150, 10, 100, 150, 100, 150, 50},
		{"page limit", 350, 2, 500, 200, 200, 200, 0},
		{"few", 3, 0, 0, 3, 3, 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := githubfake.New(t)
			for i := range tc.deliveries {
				add(s, fmt.Sprintf("g%04d", i), 502, time.Duration(i)*time.Second, false)
			}
			res, err := Redeliver(context.Background(), appClient(t, s), Options{
				Now: func() time.Time { return now }, MaxPages: tc.pages, MaxRedeliveries: tc.max,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Scanned != tc.wantScanned || len(res.Redelivered) != tc.wantRedeliv || res.Failed != tc.wantFailed || res.Skipped != tc.wantSkipped {
				t.Fatalf("result: scanned %d redelivered %d failed %d skipped %d", res.Scanned, len(res.Redelivered), res.Failed, res.Skipped)
			}
			if res.wantNewestFirst() != "" {
				t.Fatal(res.wantNewestFirst())
			}
		})
	}
}

// wantNewestFirst checks the redelivery order (GitHub lists newest first; the generated GUIDs
// grow with age).
func (r Result) wantNewestFirst() string {
	if !slices.IsSorted(r.Redelivered) {
		return "redeliveries not newest first: " + strings.Join(r.Redelivered[:min(5, len(r.Redelivered))], ",")
	}
	return ""
}

func TestRedeliverErrors(t *testing.T) {
	t.Run("listing fails", func(t *testing.T) {
		s := githubfake.New(t)
		add(s, "g1", 502, time.Minute, false)
		s.FailNext("GET /app/hook/deliveries", 500, 1)
		if _, err := Redeliver(context.Background(), appClient(t, s), Options{Now: func() time.Time { return now }}); err == nil ||
			!strings.Contains(err.Error(), "list webhook deliveries") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("redelivery fails and is asked for again next run", func(t *testing.T) {
		s := githubfake.New(t)
		add(s, "g1", 502, time.Minute, false)
		s.FailNext("POST /app/hook/deliveries/{id}/attempts", 500, 1)
		r := New(Options{Now: func() time.Time { return now }})
		if _, err := r.Run(context.Background(), appClient(t, s)); err == nil || !strings.Contains(err.Error(), "redeliver g1") {
			t.Fatalf("err = %v", err)
		}
		res, err := r.Run(context.Background(), appClient(t, s))
		if err != nil || !slices.Equal(res.Redelivered, []string{"g1"}) {
			t.Fatalf("retry run: %+v %v", res, err)
		}
	})
	t.Run("nil client", func(t *testing.T) {
		if _, err := Redeliver(context.Background(), nil, Options{}); err == nil {
			t.Fatal("want error")
		}
	})
}
