package retry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

var errTransient = errors.New("transient")

func judgeAll(v Verdict) Classifier { return func(error) Verdict { return v } }

func TestDoStopsOnSuccess(t *testing.T) {
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 5, Initial: time.Millisecond}, judgeAll(Backoff()),
		func(_ context.Context, attempt int) error {
			calls++
			if attempt < 3 {
				return errTransient
			}
			return nil
		})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}
}

func TestDoReportsExhaustion(t *testing.T) {
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 3, Initial: time.Millisecond}, judgeAll(Backoff()),
		func(context.Context, int) error { calls++; return errTransient })
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 3 || !errors.Is(err, errTransient) || calls != 3 {
		t.Fatalf("got %v after %d calls, want ExhaustedError of 3 attempts wrapping the cause", err, calls)
	}
}

func TestDoReturnsFinalErrorAsItIs(t *testing.T) {
	final := errors.New("404")
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 5}, judgeAll(Final()),
		func(context.Context, int) error { calls++; return final })
	if err != final || calls != 1 {
		t.Fatalf("got %v after %d calls, want the final error after 1", err, calls)
	}
}

func TestDoWaitsAsTheServerAsks(t *testing.T) {
	var waits []time.Duration
	err := Do(context.Background(), Policy{Attempts: 2, Initial: time.Millisecond, MaxWait: time.Second},
		judgeAll(After(20*time.Millisecond)),
		func(_ context.Context, attempt int) error {
			if attempt == 1 {
				return errTransient
			}
			return nil
		},
		WithNotify(func(err error, attempt int, wait time.Duration) { waits = append(waits, wait) }))
	if err != nil {
		t.Fatal(err)
	}
	// At least what the server asked, at most a tenth more (jitter).
	if len(waits) != 1 || waits[0] < 20*time.Millisecond || waits[0] > 22*time.Millisecond {
		t.Fatalf("waits %v, want one wait in [20ms, 22ms]", waits)
	}
}

func TestDoGivesUpOnAWaitLongerThanAllowed(t *testing.T) {
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 5, MaxWait: time.Second}, judgeAll(After(time.Hour)),
		func(context.Context, int) error { calls++; return errTransient })
	var ex *ExhaustedError
	if !errors.As(err, &ex) || calls != 1 {
		t.Fatalf("got %v after %d calls, want an outage after 1 call", err, calls)
	}
}

func TestDoRechecksBeforeRepeatingAWrite(t *testing.T) {
	writes := 0
	err := Do(context.Background(), Policy{Attempts: 4, Initial: time.Millisecond}, judgeAll(Backoff()),
		func(context.Context, int) error { writes++; return errTransient },
		WithRecheck(func(context.Context) (bool, error) { return true, nil }))
	if err != nil || writes != 1 {
		t.Fatalf("got %v after %d writes, want success after 1 write (the re-check saw it landed)", err, writes)
	}

	writes = 0
	err = Do(context.Background(), Policy{Attempts: 4, Initial: time.Millisecond}, judgeAll(Backoff()),
		func(context.Context, int) error { writes++; return errTransient },
		WithRecheck(func(context.Context) (bool, error) { return false, errors.New("read failed") }))
	if err == nil || writes != 1 || !errors.Is(err, errTransient) {
		t.Fatalf("got %v after %d writes, want an error naming both failures after 1 write", err, writes)
	}
}

func TestDoDeadlineBoundsTheWholeCall(t *testing.T) {
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 100, Initial: 5 * time.Millisecond, Deadline: 30 * time.Millisecond},
		judgeAll(Backoff()),
		func(ctx context.Context, _ int) error {
			calls++
			<-ctx.Done() // a server that never answers
			return ctx.Err()
		})
	if err == nil || calls != 1 {
		t.Fatalf("got %v after %d calls, want the deadline after the one hung attempt", err, calls)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
	} {
		h := http.Header{}
		if tc.v != "" {
			h.Set("Retry-After", tc.v)
		}
		got, ok := RetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q: got %v %v, want %v %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	ra := http.Header{"Retry-After": {"3"}}
	for _, tc := range []struct {
		status int
		h      http.Header
		want   Verdict
	}{
		{400, nil, Final()},
		{404, nil, Final()},
		{422, nil, Final()},
		{408, nil, Backoff()},
		{429, nil, Backoff()},
		{429, ra, After(3 * time.Second)},
		{500, nil, Backoff()},
		{503, ra, After(3 * time.Second)},
	} {
		if got := HTTPStatus(tc.status, tc.h); got != tc.want {
			t.Errorf("%d %v: got %+v, want %+v", tc.status, tc.h, got, tc.want)
		}
	}
}

func ghError(status int, h http.Header) error {
	return &github.ErrorResponse{Response: &http.Response{StatusCode: status, Header: h, Request: &http.Request{}}}
}

func TestGitHub(t *testing.T) {
	secs := 5 * time.Second
	reset := time.Now().Add(10 * time.Second)
	for name, tc := range map[string]struct {
		err  error
		want func(Verdict) bool
	}{
		"secondary limit with Retry-After": {&github.AbuseRateLimitError{RetryAfter: &secs}, func(v Verdict) bool { return v == After(secs) }},
		"secondary limit without":          {&github.AbuseRateLimitError{}, func(v Verdict) bool { return v == After(time.Minute) }},
		"primary limit": {&github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: reset}}},
			func(v Verdict) bool { return v.Retry && v.After > 9*time.Second && v.After <= 11*time.Second }},
		"403 with Retry-After": {ghError(403, http.Header{"Retry-After": {"2"}}), func(v Verdict) bool { return v == After(2*time.Second) }},
		"403 without":          {ghError(403, http.Header{}), func(v Verdict) bool { return v == Final() }},
		"404":                  {ghError(404, http.Header{}), func(v Verdict) bool { return v == Final() }},
		"502":                  {ghError(502, http.Header{}), func(v Verdict) bool { return v == Backoff() }},
		"timeout":              {context.DeadlineExceeded, func(v Verdict) bool { return v == Backoff() }},
		"other":                {errors.New("bad token"), func(v Verdict) bool { return v == Final() }},
	} {
		if got := GitHub(tc.err); !tc.want(got) {
			t.Errorf("%s: got %+v", name, got)
		}
	}
}
