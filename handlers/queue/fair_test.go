package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The jobs of an installation at its running bound wait, and a job of another installation
// queued after them starts first; a job of no installation is never bounded; a negative bound
// is no bound. Every handler blocks until the test lets it go, so only order is asserted.
func TestRunningBoundPerInstallation(t *testing.T) {
	tests := []struct {
		name    string
		workers int
		bound   int     // MaxRunningPerInstallation
		queued  []int64 // installation of each job, in arrival order
		first   []int   // the jobs (by index) that start before any job ends
	}{
		{"default bound of two workers", 2, 0, []int64{1, 1, 1, 2}, []int{0, 3}},
		{"bound 2 of three workers", 3, 2, []int64{1, 1, 1, 2}, []int{0, 1, 3}},
		{"no bound", 2, -1, []int64{1, 1, 1, 2}, []int{0, 1}},
		{"jobs of no installation", 2, 0, []int64{0, 0, 2}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewMemory(MemoryOptions{Workers: tt.workers, MaxRunningPerInstallation: tt.bound})
			var mu sync.Mutex
			gates := map[string]chan struct{}{}
			started := make(chan string, len(tt.queued))
			for i, inst := range tt.queued {
				key := fmt.Sprintf("o/r#%d", i)
				gates[key] = make(chan struct{})
				if err := q.Enqueue(context.Background(), Job{Key: key, InstallationID: inst, Kind: KindPullRequest}); err != nil {
					t.Fatal(err)
				}
			}
			err := q.Start(context.Background(), func(ctx context.Context, j Job) error {
				started <- j.Key
				mu.Lock()
				g := gates[j.Key]
				mu.Unlock()
				select {
				case <-g:
				case <-ctx.Done():
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for range tt.first {
				select {
				case k := <-started:
					got[k] = true
				case <-time.After(10 * time.Second):
					t.Fatalf("only %v started", got)
				}
			}
			for _, i := range tt.first {
				if k := fmt.Sprintf("o/r#%d", i); !got[k] {
					t.Errorf("started first %v, want job %d (installation %d) among them", got, i, tt.queued[i])
				}
			}
			// Let everything go: every job runs in the end.
			mu.Lock()
			for _, g := range gates {
				close(g)
			}
			mu.Unlock()
			for range len(tt.queued) - len(tt.first) {
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("a job held back by the bound never ran")
				}
			}
			stop(t, q)
		})
	}
}
