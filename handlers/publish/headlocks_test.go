package publish

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"
)

// waitClosed fails the test when c is not closed within a generous bound: a lock that never
// comes is a deadlock, whatever the machine's speed.
func waitClosed(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting", what)
	}
}

// Two heads whose keys once shared one of 64 locks: one head's write held (a stuck or
// rate-limited GitHub call under its lock) must not hold the other head back.
func TestHeadLocksDoNotHoldOtherHeadsBack(t *testing.T) {
	stripe := func(key string) uint32 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		return h.Sum32() % 64
	}
	a := "o/r#30@" + fmt.Sprintf("%040x", 1) + "/lensgate"
	var b string
	for i := 2; b == ""; i++ {
		if k := fmt.Sprintf("Octo/Other#%d@%040x/lensgate", i, i); stripe(k) == stripe(a) {
			b = k
		}
	}
	var locks headLocks
	releaseA := locks.lock(a)
	done := make(chan struct{})
	go func() {
		locks.lock(b)()
		close(done)
	}()
	waitClosed(t, done, "another head's lock while the first is held")
	releaseA()
	if n := len(locks.locks); n != 0 {
		t.Fatalf("%d locks kept after every holder released", n)
	}
}

// The same head's writes still wait for each other, and the lock is forgotten once free.
func TestHeadLockOrdersOneHead(t *testing.T) {
	var locks headLocks
	key := "o/r#1@" + fmt.Sprintf("%040x", 7) + "/lensgate"
	release := locks.lock(key)
	got := make(chan struct{})
	go func() {
		r := locks.lock(key)
		close(got)
		r()
	}()
	// Wait until the second caller waits for the lock (it counted itself first).
	eventually(t, "the second caller waiting", func() bool { return locks.locks[key].refs == 2 }, &locks)
	select {
	case <-got:
		t.Fatal("the same head's lock was taken twice")
	default:
	}
	release()
	waitClosed(t, got, "the head's lock after its release")
	eventually(t, "the free lock forgotten", func() bool { return len(locks.locks) == 0 }, &locks)
}

// eventually polls cond under the locks' own mutex until it holds, failing after a generous
// bound.
func eventually(t *testing.T, what string, cond func() bool, locks *headLocks) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		locks.mu.Lock()
		ok := cond()
		locks.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
