package pdp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// Audit record constants, following the ASDD audit ledger format.
const (
	AuditSchema = "asdd/audit/v0.1"
	Genesis     = "sha256:genesis"
	maxLine     = 1 << 20
)

// Record is one audit record of a PDP decision. Prev, Hash and EventID are the chain fields:
// Hash is "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of the record without Hash
// and EventID, and Prev is the previous record's Hash (Genesis for the first).
type Record struct {
	Schema                 string  `json:"schema"`
	Kind                   string  `json:"kind"`
	TS                     string  `json:"ts"`
	Agent                  Agent   `json:"agent"`
	AgentID                string  `json:"agent_id"`
	Action                 string  `json:"action"`
	Target                 Target  `json:"target"`
	AuthorizingDecision    string  `json:"authorizing_decision"`
	AccountableHuman       string  `json:"accountable_human"`
	RunID                  string  `json:"run_id"`
	UntrustedAsInstruction bool    `json:"untrusted_as_instruction"`
	Outcome                Verdict `json:"outcome"`
	Reasoning              string  `json:"reasoning"`
	Payload                Payload `json:"payload"`
	Prev                   string  `json:"prev"`
	Hash                   string  `json:"hash,omitempty"`
	EventID                string  `json:"event_id,omitempty"`
}

// Agent identifies who acted.
type Agent struct {
	Identity string `json:"identity"`
	Role     string `json:"role"`
}

// Target is what the action was aimed at.
type Target struct {
	Repo   string `json:"repo"`
	PR     int    `json:"pr"`
	Commit string `json:"commit"`
	Object string `json:"object,omitempty"`
}

// Verdict is the decision and what was done about it.
type Verdict struct {
	Verdict     string `json:"verdict"` // "allow" or "deny"
	ActionTaken string `json:"action_taken"`
}

// Payload carries the details of the proposal. It never holds bodies or comment text, only
// their sizes, so the ledger cannot leak what a runtime wrote.
type Payload struct {
	Source      string   `json:"source,omitempty"`
	Lenses      []string `json:"lenses,omitempty"`
	ReviewEvent string   `json:"review_event,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	Reaction    string   `json:"reaction,omitempty"`
	BodyBytes   int      `json:"body_bytes,omitempty"`
	Seq         int      `json:"seq"`
	Actions     int      `json:"actions"`
	Writes      int      `json:"writes"`
	// Tokens is what the run's model calls cost; only on the record of the write that
	// concludes the gate.
	Tokens *Tokens `json:"tokens,omitempty"`
}

// Tokens is the model spend of one review run, as numbers only.
type Tokens struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Total      int  `json:"total"`
	Estimated  bool `json:"estimated"`
	Calls      int  `json:"calls"`
	// Lenses is each model lens's share of the total.
	Lenses map[string]int `json:"lenses,omitempty"`
}

// Sink stores audit records. Append seals the record onto the sink's chain (setting Prev,
// Hash and EventID) and stores it; it returns the sealed record.
type Sink interface {
	Append(ctx context.Context, r Record) (Record, error)
}

// RecordHash computes a record's chain hash over its canonical JSON without Hash and EventID.
func RecordHash(r Record) (string, error) {
	r.Hash, r.EventID = "", ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", fmt.Errorf("encode audit record: %w", err)
	}
	canon, err := jcs.Transform(bytes.TrimSpace(buf.Bytes()))
	if err != nil {
		return "", fmt.Errorf("canonicalise audit record: %w", err)
	}
	return "sha256:" + digest.SHA256Hex(canon), nil
}

func seal(r Record, prev string) (Record, error) {
	r.Prev = prev
	h, err := RecordHash(r)
	if err != nil {
		return Record{}, err
	}
	r.Hash = h
	r.EventID = h[len("sha256:") : len("sha256:")+32]
	return r, nil
}

// MemorySink keeps records in memory, for tests.
type MemorySink struct {
	mu      sync.Mutex
	records []Record
	// Fail, when set, makes Append fail (to test that a lost record denies the action).
	Fail error
}

// Append implements Sink.
func (m *MemorySink) Append(_ context.Context, r Record) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return Record{}, m.Fail
	}
	prev := Genesis
	if n := len(m.records); n > 0 {
		prev = m.records[n-1].Hash
	}
	sealed, err := seal(r, prev)
	if err != nil {
		return Record{}, err
	}
	m.records = append(m.records, sealed)
	return sealed, nil
}

// Records returns a copy of the stored records.
func (m *MemorySink) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.records...)
}

// FileSink appends records as JSON lines to a file. Opening an existing ledger verifies it and
// continues its chain; a broken ledger is refused rather than extended. The one exception is a
// torn last line, what a crash in the middle of an append leaves: it is set aside in a file of
// its own and the chain continues from the last whole record.
type FileSink struct {
	mu       sync.Mutex
	f        *os.File
	last     string
	setAside string
}

// OpenFileSink opens (or creates) a JSONL ledger.
func OpenFileSink(path string) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit ledger: %w", err)
	}
	s := &FileSink{f: f}
	if err := s.open(path); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("audit ledger %s: %w", path, err)
	}
	return s, nil
}

// SetAside names the file a torn last line was moved to when the ledger was opened ("" when
// the ledger ended with a whole record).
func (s *FileSink) SetAside() string { return s.setAside }

// open verifies the ledger and, when its last line has no newline (every append ends with one,
// so only a crash mid-write leaves that), completes a whole record or sets the torn bytes aside.
func (s *FileSink) open(path string) error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	cut, err := lastNewline(s.f, st.Size())
	if err != nil {
		return err
	}
	res, err := Verify(io.NewSectionReader(s.f, 0, cut))
	if err != nil {
		return err
	}
	s.last = res.Last
	if cut == st.Size() {
		return nil
	}
	tail := make([]byte, st.Size()-cut)
	if _, err := s.f.ReadAt(tail, cut); err != nil {
		return fmt.Errorf("read the last line: %w", err)
	}
	if h, err := verifyLine(tail, s.last); err == nil {
		// A whole record whose newline did not make it: finish the line.
		if _, err := s.f.Write([]byte("\n")); err != nil {
			return fmt.Errorf("complete the last line: %w", err)
		}
		s.last = h
		return s.f.Sync()
	}
	aside := fmt.Sprintf("%s.torn-%d", path, cut)
	if err := os.WriteFile(aside, tail, 0o600); err != nil {
		return fmt.Errorf("set the torn last line aside: %w", err)
	}
	if err := s.f.Truncate(cut); err != nil {
		return fmt.Errorf("cut the torn last line: %w", err)
	}
	s.setAside = aside
	return s.f.Sync()
}

// lastNewline returns the offset just after the file's last newline (0 when it has none).
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read audit ledger: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Append implements Sink. Each record is written with one write call and synced.
func (s *FileSink) Append(_ context.Context, r Record) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return Record{}, errors.New("audit ledger is closed")
	}
	sealed, err := seal(r, s.last)
	if err != nil {
		return Record{}, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sealed); err != nil {
		return Record{}, fmt.Errorf("encode audit record: %w", err)
	}
	if _, err := s.f.Write(buf.Bytes()); err != nil {
		return Record{}, fmt.Errorf("write audit record: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return Record{}, fmt.Errorf("sync audit ledger: %w", err)
	}
	s.last = sealed.Hash
	return sealed, nil
}

// Close closes the ledger file.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// VerifyResult summarises a verified ledger.
type VerifyResult struct {
	Records int
	Last    string // hash of the last record, Genesis for an empty ledger
}

// ChainError says where a ledger's chain breaks.
type ChainError struct {
	Line   int // 1-based line of the offending record
	Reason string
}

func (e *ChainError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Verify reads a JSONL ledger and checks every record's hash, event id and link to its
// predecessor. It hashes each record as written (every field, known or not), so it also
// verifies ledgers of other ASDD implementations, and any added, removed or changed field
// breaks the chain. Blank lines are not allowed.
func Verify(r io.Reader) (VerifyResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	res := VerifyResult{Last: Genesis}
	for sc.Scan() {
		res.Records++
		h, err := verifyLine(sc.Bytes(), res.Last)
		if err != nil {
			return res, &ChainError{Line: res.Records, Reason: err.Error()}
		}
		res.Last = h
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read audit ledger: %w", err)
	}
	return res, nil
}

// VerifyLine checks one JSON line of a ledger against its predecessor's hash and returns its
// own, so a reader that verified a ledger up to a record can verify what is appended after it.
func VerifyLine(line []byte, prev string) (string, error) { return verifyLine(line, prev) }

// verifyLine checks one JSON record against its predecessor's hash and returns its own.
func verifyLine(line []byte, prev string) (string, error) {
	v, err := jcs.Parse(line)
	if err != nil {
		return "", fmt.Errorf("not an audit record: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("not an audit record: not a JSON object")
	}
	if m["schema"] != AuditSchema {
		return "", fmt.Errorf("schema %v is not %s", m["schema"], AuditSchema)
	}
	if m["prev"] != prev {
		return "", fmt.Errorf("prev %v does not link to the previous record %q", m["prev"], prev)
	}
	hash, _ := m["hash"].(string)
	eventID, _ := m["event_id"].(string)
	body := make(map[string]any, len(m))
	for k, x := range m {
		if k != "hash" && k != "event_id" {
			body[k] = x
		}
	}
	canon, err := jcs.Canonical(body)
	if err != nil {
		return "", fmt.Errorf("canonicalise record: %w", err)
	}
	want := "sha256:" + digest.SHA256Hex(canon)
	if hash != want {
		return "", fmt.Errorf("hash %q does not match the record content %q", hash, want)
	}
	if eventID != want[len("sha256:"):len("sha256:")+32] {
		return "", errors.New("event_id does not match the hash")
	}
	return hash, nil
}

// VerifyRecords checks an in-memory chain that starts at Genesis.
func VerifyRecords(recs []Record) error {
	prev := Genesis
	for i, r := range recs {
		if err := VerifyRecord(r, prev); err != nil {
			return &ChainError{Line: i + 1, Reason: err.Error()}
		}
		prev = r.Hash
	}
	return nil
}

// VerifyRecord checks one record against the hash of its predecessor.
func VerifyRecord(r Record, prev string) error {
	if r.Schema != AuditSchema {
		return fmt.Errorf("schema %q is not %s", r.Schema, AuditSchema)
	}
	if r.Prev != prev {
		return fmt.Errorf("prev %q does not link to the previous record %q", r.Prev, prev)
	}
	want, err := RecordHash(r)
	if err != nil {
		return err
	}
	if r.Hash != want {
		return fmt.Errorf("hash %q does not match the record content %q", r.Hash, want)
	}
	if r.EventID != want[len("sha256:"):len("sha256:")+32] {
		return errors.New("event_id does not match the hash")
	}
	return nil
}
