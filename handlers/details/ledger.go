package details

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lensgate/lensgate/review/pdp"
)

// maxLedgerLine is the longest ledger line read (the ledger's own bound).
const maxLedgerLine = 1 << 20

// errLedgerTooLarge is the answer for a ledger over maxAuditBytes.
var errLedgerTooLarge = fmt.Errorf("the audit ledger is larger than %d MiB; read it with lensgate's ledger tools", maxAuditBytes>>20)

// span is where one record lies in the ledger file.
type span struct {
	off int64
	n   int32
}

// ledgerIndex reads the audit ledger once and then only what is appended to it: it verifies
// the chain line by line as it reads, keeps the result, and remembers where each pull
// request's records lie, so that a page view reads only the records of its pull request.
// The ledger is append-only; a file that was replaced, shrank, changed without growing, or
// whose last verified record is no longer where it was is read and verified again from the
// start.
type ledgerIndex struct {
	path string
	// lock is a one-slot semaphore rather than a mutex so that a view waiting for another
	// view's read gives up when its request ends.
	lock chan struct{}
	st   ledgerState
	// linesRead counts the ledger lines parsed since the index was made.
	linesRead int64
}

// ledgerState is what the index knows of the file up to size.
type ledgerState struct {
	file    os.FileInfo
	size    int64 // bytes read: every whole line before this offset is indexed
	modTime time.Time
	records int
	last    string // hash of the last verified record
	lastAt  span   // where that record lies, to notice an edit of the file
	lastRaw []byte
	broken  error // the chain's first break, once found
	byPR    map[string][]span
}

func newLedgerIndex(path string) *ledgerIndex {
	return &ledgerIndex{path: path, lock: make(chan struct{}, 1)}
}

func prKey(repo string, number int) string { return strings.ToLower(repo) + "#" + strconv.Itoa(number) }

// auditRead is one view's part of the ledger.
type auditRead struct {
	records []pdp.Record // oldest first, at most maxAuditShown
	total   int
	chain   int // records in the ledger
	last    string
	broken  error
}

// read brings the index up to date with the file and reads the last max records of one pull
// request.
func (x *ledgerIndex) read(ctx context.Context, repo string, number, max int) (auditRead, error) {
	select {
	case x.lock <- struct{}{}:
		defer func() { <-x.lock }()
	case <-ctx.Done():
		return auditRead{}, ctx.Err()
	}
	f, err := os.Open(x.path)
	if err != nil {
		return auditRead{}, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return auditRead{}, fmt.Errorf("stat: %w", err)
	}
	if fi.Size() > maxAuditBytes {
		return auditRead{}, errLedgerTooLarge
	}
	if !x.st.continues(f, fi) {
		x.st = ledgerState{file: fi, last: pdp.Genesis, byPR: map[string][]span{}}
	}
	if err := x.catchUp(ctx, f, fi); err != nil {
		return auditRead{}, err
	}
	spans := x.st.byPR[prKey(repo, number)]
	out := auditRead{total: len(spans), chain: x.st.records, last: x.st.last, broken: x.st.broken}
	if len(spans) > max {
		spans = spans[len(spans)-max:]
	}
	for _, sp := range spans {
		line := make([]byte, sp.n)
		if _, err := f.ReadAt(line, sp.off); err != nil {
			return auditRead{}, fmt.Errorf("read a record: %w", err)
		}
		var r pdp.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return auditRead{}, fmt.Errorf("read a record: %w", err)
		}
		out.records = append(out.records, r)
	}
	return out, nil
}

// continues reports whether the file is the one indexed, grown or unchanged: the same file,
// no shorter, changed only if it grew, and the last verified record still in its place.
func (st *ledgerState) continues(f *os.File, fi os.FileInfo) bool {
	if st.file == nil || !os.SameFile(st.file, fi) || fi.Size() < st.size {
		return false
	}
	if fi.Size() == st.size && !fi.ModTime().Equal(st.modTime) {
		return false
	}
	if st.lastAt.n == 0 {
		return true
	}
	got := make([]byte, st.lastAt.n)
	_, err := f.ReadAt(got, st.lastAt.off)
	return err == nil && bytes.Equal(got, st.lastRaw)
}

// catchUp indexes and verifies the whole lines after what the index has read. It stops when
// ctx ends; what it read until then stays indexed.
func (x *ledgerIndex) catchUp(ctx context.Context, f *os.File, fi os.FileInfo) error {
	st := &x.st
	st.modTime = fi.ModTime()
	if fi.Size() == st.size {
		return nil
	}
	defer func() {
		// The last verified record as it is now, to notice an edit before the next read.
		st.lastRaw = make([]byte, st.lastAt.n)
		if _, err := f.ReadAt(st.lastRaw, st.lastAt.off); err != nil {
			st.lastRaw = nil
		}
	}()
	br := bufio.NewReaderSize(io.NewSectionReader(f, st.size, fi.Size()-st.size), 64<<10)
	var target struct {
		Target pdp.Target `json:"target"`
	}
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return nil // a torn last line is read once it is whole
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		at := span{off: st.size, n: int32(len(line) - 1)}
		st.size += int64(len(line))
		x.linesRead++
		body := line[:len(line)-1]
		if st.broken == nil {
			st.records++
			h, err := pdp.VerifyLine(body, st.last)
			if err != nil {
				st.broken = &pdp.ChainError{Line: st.records, Reason: err.Error()}
			} else {
				st.last, st.lastAt = h, at
			}
		}
		target.Target = pdp.Target{}
		if json.Unmarshal(body, &target) == nil && target.Target.Repo != "" {
			k := prKey(target.Target.Repo, target.Target.PR)
			st.byPR[k] = append(st.byPR[k], at)
		}
	}
}

// readLine reads one whole line with its newline, at most maxLedgerLine bytes; io.EOF when no
// whole line is left.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLedgerLine {
			return nil, fmt.Errorf("a line exceeds %d bytes", maxLedgerLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
