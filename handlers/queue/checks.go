package queue

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// CheckKey names the App's check run of one name on one head of one repository.
type CheckKey struct {
	// App is the GitHub App's id: only that App writes its check runs.
	App int64
	// Repo is the repository's node id (or owner/name, lower case, when the publication did
	// not know it): a renamed repository keeps its records, and a new one under an old name
	// does not inherit them. A reader without a record under the node id reads owner/name.
	Repo string
	Head string
	Name string
}

// CheckRecord is what the App last wrote to a check run, so a later review of the same head
// finds the run without listing the head's check runs.
type CheckRecord struct {
	ID          int64
	Status      string // queued, in_progress, completed or CheckStatusUnknown
	Title       string // the output's title
	Annotations int    // annotations the run holds
	At          time.Time
}

// CheckStatusUnknown is the status of a record written before a create, and after a write
// whose outcome is not known (its answer was lost, its job ended, it failed): GitHub may hold
// a run, or a state of one, that no record names. ID is then the newest run the writer knew of
// (0: none). Such a record is never trusted: the head's check runs are listed first.
const CheckStatusUnknown = "unknown"

// CheckRecords keeps a CheckRecord per check run the App writes. It outlives the job that
// wrote it, so a push, a re-run or a repeated review of a head costs no check-run lookup:
// the record says which run the head has, and no record says the App never began to write one
// (since the store began, within its retention): a create is recorded as begun before it is
// sent. A store that cannot answer, and a record of status CheckStatusUnknown, make the caller
// list.
type CheckRecords interface {
	// Check returns the record of key; found is false when there is none (or only one older
	// than CheckRecordsKept, which a store may also leave out).
	Check(ctx context.Context, key CheckKey) (rec CheckRecord, found bool, err error)
	// PutCheck records a write as Supersedes orders them: a record of an older run of the key
	// (a smaller id), or an in-progress write to a run already recorded completed, does not
	// replace a newer one; a record of status CheckStatusUnknown replaces any.
	PutCheck(ctx context.Context, key CheckKey, rec CheckRecord) error
	// ForgetCheck drops the record of key: its write failed, or the run is gone.
	ForgetCheck(ctx context.Context, key CheckKey) error
}

// CheckRecordsKept is how long a record is trusted. GitHub marks a check run that stays
// incomplete for 14 days as stale, so an older record may no longer say what the run is.
const CheckRecordsKept = 14 * 24 * time.Hour

// DefaultMemoryChecks bounds an in-memory CheckRecords.
const DefaultMemoryChecks = 10000

// MemoryChecks is the in-process CheckRecords, for the memory queue: bounded, forgetting the
// least recently written first. A restart forgets every record, as it forgets the queue.
type MemoryChecks struct {
	limit int

	mu    sync.Mutex
	items map[CheckKey]*list.Element
	order *list.List // front: most recently written
}

type memoryCheck struct {
	key CheckKey
	rec CheckRecord
}

// NewMemoryChecks keeps up to limit records (DefaultMemoryChecks when limit <= 0).
func NewMemoryChecks(limit int) *MemoryChecks {
	if limit <= 0 {
		limit = DefaultMemoryChecks
	}
	return &MemoryChecks{limit: limit, items: map[CheckKey]*list.Element{}, order: list.New()}
}

var _ CheckRecords = (*MemoryChecks)(nil)

// Check implements CheckRecords.
func (m *MemoryChecks) Check(_ context.Context, key CheckKey) (CheckRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[key]
	if !ok {
		return CheckRecord{}, false, nil
	}
	return e.Value.(*memoryCheck).rec, true, nil
}

// PutCheck implements CheckRecords.
func (m *MemoryChecks) PutCheck(_ context.Context, key CheckKey, rec CheckRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		mc := e.Value.(*memoryCheck)
		if !Supersedes(rec, mc.rec) {
			return nil
		}
		mc.rec = rec
		m.order.MoveToFront(e)
		return nil
	}
	m.items[key] = m.order.PushFront(&memoryCheck{key: key, rec: rec})
	for m.order.Len() > m.limit {
		old := m.order.Back()
		m.order.Remove(old)
		delete(m.items, old.Value.(*memoryCheck).key)
	}
	return nil
}

// ForgetCheck implements CheckRecords.
func (m *MemoryChecks) ForgetCheck(_ context.Context, key CheckKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		m.order.Remove(e)
		delete(m.items, key)
	}
	return nil
}

// Supersedes reports whether rec may replace old: a newer run, or a later write to the same
// run that does not take a completed run back to in progress (GitHub does not reopen one,
// so such a write is an older one arriving late). A record of unknown status replaces any
// record, and is replaced only by one of the run it names or a newer run: a write of an older
// run says nothing of the create or write that was left unknown.
func Supersedes(rec, old CheckRecord) bool {
	switch {
	case rec.Status == CheckStatusUnknown:
		return true
	case rec.ID != old.ID:
		return rec.ID > old.ID
	case old.Status == "completed" && rec.Status != "completed":
		return false
	}
	return true
}
