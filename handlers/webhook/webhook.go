// Package webhook is the App's webhook endpoint: it checks each delivery's signature and size,
// drops replayed bodies, reads the few payload fields each event needs, and turns events into
// review jobs on the queue. It answers GitHub within milliseconds; the reviews run in
// handlers/worker.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
)

// MaxWebhookBytes is GitHub's cap on webhook payloads (25 MiB); larger bodies get 413.
const MaxWebhookBytes = 25 << 20

// asyncEvents need GitHub calls before they become a job, so they run in go-githubapp's bounded
// queue scheduler instead of inside the request.
var asyncEvents = map[string]bool{
	"issue_comment":             true,
	"check_run":                 true,
	"check_suite":               true,
	"installation":              true,
	"installation_repositories": true,
}

// hookScheduler runs cheap events (parse, filter, enqueue) inside the request, so a full job
// queue or a malformed payload is answered to GitHub, and hands events that need GitHub calls
// to an asynchronous scheduler after checking that they parse.
type hookScheduler struct {
	async   githubapp.Scheduler
	replays *replayGuard
	events  *eventMetrics
}

func (s hookScheduler) Schedule(ctx context.Context, d githubapp.Dispatch) error {
	// A signature has no timestamp: a captured delivery replayed under a new delivery id would
	// pass it. GitHub never sends the same body twice under two ids (its redeliveries keep the
	// id), so the body decides.
	// This process's store answers at once; a durable queue also checks the jobs' body against
	// every replica's (see queue.Job.Body), for deliveries that enqueue a job.
	digest, ok := verifiedDigest(ctx)
	if !ok {
		// The dispatcher has no secret of its own: a delivery that did not come through
		// hookHandler had its signature checked by no one.
		return errors.New("webhook reached the dispatcher without a checked signature")
	}
	if first, seen := s.replays.firstID(digest, d.DeliveryID); seen {
		replayIgnored(ctx, s.events, d.EventType, first)
		return nil
	}
	wb := &webhookBody{event: d.EventType, body: queue.Body{Digest: hex.EncodeToString(digest[:]), Delivery: d.DeliveryID}}
	err := s.schedule(context.WithValue(ctx, webhookBodyKey{}, wb), d)
	switch f := wb.replayOf.Load(); {
	case err != nil:
	case f == nil:
		s.replays.remember(digest, d.DeliveryID)
	case *f != "": // a replay the queue found; its first delivery is worth remembering here too
		s.replays.remember(digest, *f)
	}
	return err
}

// replayIgnored answers a replayed body as a duplicate delivery.
func replayIgnored(ctx context.Context, m *eventMetrics, event, first string) {
	zerolog.Ctx(ctx).Warn().Str("first_delivery", first).Msg("body already accepted under another delivery id; replay ignored")
	respond(ctx, http.StatusOK, "duplicate delivery")
	m.outcome(event, "replay")
}

// webhookBodyKey holds the *webhookBody of the delivery being handled.
type webhookBodyKey struct{}

// webhookBody is what the jobs of a delivery carry for the queue's replay check, and what the
// queue answered (the first delivery id of a replayed body).
type webhookBody struct {
	event    string
	body     queue.Body
	replayOf atomic.Pointer[string]
}

func webhookBodyOf(ctx context.Context) *webhookBody {
	wb, _ := ctx.Value(webhookBodyKey{}).(*webhookBody)
	return wb
}

// asyncContext is go-githubapp's context for asynchronous events, which also carries the
// delivery's body for the queue's replay check.
func asyncContext(ctx context.Context) context.Context {
	out := githubapp.DefaultContextDeriver(ctx)
	if wb := webhookBodyOf(ctx); wb != nil {
		out = context.WithValue(out, webhookBodyKey{}, wb)
	}
	return out
}

func (s hookScheduler) schedule(ctx context.Context, d githubapp.Dispatch) error {
	// In-request handlers decode the payload themselves and answer 400 when it is not JSON.
	if asyncEvents[d.EventType] {
		if !json.Valid(d.Payload) {
			return badPayload(errors.New("body is not JSON"))
		}
		if _, err := github.ParseWebHook(d.EventType, d.Payload); err != nil {
			return badPayload(err)
		}
		return s.async.Schedule(ctx, d)
	}
	return d.Execute(ctx)
}

// maxRememberedBodies bounds the replay guard: as many bodies as the memory queue remembers
// delivery ids, about 1 MB.
const maxRememberedBodies = 10000

// macDigest names a verified body for the replay check by its signature: under one secret the
// HMAC-SHA256 of a body is as unique as its SHA-256, and it is already computed, so the body is
// hashed once per delivery instead of three times. The MAC is hashed again with the event type so
// that the stored name is neither the signature GitHub sent nor the same for two event types.
func macDigest(event string, mac []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte("lensgate webhook body\x00"))
	h.Write([]byte(event))
	h.Write([]byte{0})
	h.Write(mac)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// verifiedKey holds the replay digest of the delivery whose signature hookHandler checked.
type verifiedKey struct{}

func verifiedDigest(ctx context.Context) ([sha256.Size]byte, bool) {
	d, ok := ctx.Value(verifiedKey{}).([sha256.Size]byte)
	return d, ok
}

// replayGuard remembers the digests of the last accepted bodies with their delivery ids; the
// oldest is forgotten first, so the store stays bounded.
type replayGuard struct {
	mu   sync.Mutex
	ids  map[[sha256.Size]byte]string
	ring [][sha256.Size]byte
	used []bool
	next int
}

func newReplayGuard(n int) *replayGuard {
	return &replayGuard{ids: make(map[[sha256.Size]byte]string, n), ring: make([][sha256.Size]byte, n), used: make([]bool, n)}
}

// firstID returns the delivery id a body was first accepted under, when that is not id.
func (g *replayGuard) firstID(d [sha256.Size]byte, id string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	first, ok := g.ids[d]
	return first, ok && first != id
}

func (g *replayGuard) remember(d [sha256.Size]byte, id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.ids[d]; ok {
		return
	}
	if g.used[g.next] {
		delete(g.ids, g.ring[g.next])
	}
	g.ring[g.next], g.used[g.next] = d, true
	g.ids[d] = id
	g.next = (g.next + 1) % len(g.ring)
}

// eventMetrics count webhook deliveries and what became of them.
type eventMetrics struct {
	rejected *prometheus.CounterVec // by reason
	outcomes *prometheus.CounterVec // by event.action and outcome
	held     prometheus.Gauge       // body bytes reserved by requests not verified yet
}

func newEventMetrics(reg prometheus.Registerer) *eventMetrics {
	m := &eventMetrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_webhook_rejected_total",
			Help: "Webhook requests refused, by reason (signature, payload, too-large, busy, method, queue-full, error).",
		}, []string{"reason"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_webhook_events_total",
			Help: "Webhook events handled, by event.action and outcome (queued, duplicate, replay, ignored, refused, logged).",
		}, []string{"event", "outcome"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lensgate_webhook_unverified_bytes",
			Help: "Body bytes reserved by webhook requests whose signature is not checked yet.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.rejected, m.outcomes, m.held)
	}
	return m
}

func (m *eventMetrics) outcome(event, outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(event, outcome).Inc()
	}
}

func (m *eventMetrics) reject(reason string) {
	if m != nil {
		m.rejected.WithLabelValues(reason).Inc()
	}
}

// hookErrorCallback maps errors to answers: 413 for a body over the limit, 400 for bad
// signatures and malformed payloads, 503 when the queue or the event stage is full, 500 else.
func hookErrorCallback(m *eventMetrics, fallback githubapp.ErrorCallback) githubapp.ErrorCallback {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		log := zerolog.Ctx(r.Context())
		var ve githubapp.ValidationError
		var mbe *http.MaxBytesError
		// ValidationError does not unwrap, so look into its cause for the size limit.
		if errors.As(err, &ve) && ve.Cause != nil {
			errors.As(ve.Cause, &mbe)
		} else {
			errors.As(err, &mbe)
		}
		switch {
		case mbe != nil:
			m.reject("too-large")
			log.Warn().Int64("limit", mbe.Limit).Msg("webhook body over the size limit")
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		case errors.As(err, &ve):
			m.reject("signature")
			log.Warn().Err(ve.Cause).Msg("webhook refused: invalid signature or headers")
			http.Error(w, "invalid webhook signature or headers", http.StatusBadRequest)
		case errors.Is(err, errBadPayload):
			m.reject("payload")
			log.Warn().Err(err).Msg("webhook refused: malformed payload")
			http.Error(w, "malformed payload", http.StatusBadRequest)
		case errors.Is(err, queue.ErrFull), errors.Is(err, githubapp.ErrCapacityExceeded):
			m.reject("queue-full")
			log.Warn().Err(err).Msg("webhook refused: no capacity")
			http.Error(w, "no capacity, redeliver later", http.StatusServiceUnavailable)
		default:
			m.reject("error")
			fallback(w, r, err)
		}
	}
}

// DefaultMaxUnverifiedBytes bounds the request body bytes held, all requests together, before
// their signature is checked. 20 concurrent 25 MiB bodies would otherwise take 500 MiB from
// anyone who can reach the endpoint.
const DefaultMaxUnverifiedBytes = 64 << 20

// Draining an oversized body after the 413 lets a client that is still sending read the answer
// instead of a connection reset; the drain is bounded in bytes and time.
const (
	maxDrainBytes = 2 * MaxWebhookBytes
	drainTimeout  = 10 * time.Second
)

// bodyBudget counts the bytes held by requests whose signature is not checked yet.
type bodyBudget struct {
	mu          sync.Mutex
	used, limit int64
	held        prometheus.Gauge // nil without metrics
}

func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	b.report()
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.report()
}

func (b *bodyBudget) report() {
	if b.held != nil {
		b.held.Set(float64(b.used))
	}
}

// hookHandler wraps go-githubapp's dispatcher with what it leaves out: POST only, a size limit,
// a bound on the memory unverified requests hold, a required SHA-256 signature (the library
// would fall back to SHA-1) checked while the body is read, and the request logger.
type hookHandler struct {
	next   http.Handler
	m      *eventMetrics
	log    zerolog.Logger
	secret []byte
	budget *bodyBudget
	now    func() time.Time // nil: time.Now
}

// receivedAtKey holds when the webhook's request reached the handler.
type receivedAtKey struct{}

// receivedAt is when the webhook of ctx was received, before its body was read and checked, so
// that deliveries handled concurrently keep the order they arrived in (see queue.Job.EnqueuedAt).
func receivedAt(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(receivedAtKey{}).(time.Time)
	return t, ok
}

func newHookHandler(d http.Handler, m *eventMetrics, logger zerolog.Logger, secret string, maxUnverified int64) *hookHandler {
	if maxUnverified <= 0 {
		maxUnverified = DefaultMaxUnverifiedBytes
	}
	budget := &bodyBudget{limit: maxUnverified}
	if m != nil {
		budget.held = m.held
	}
	return &hookHandler{next: d, m: m, log: logger, secret: []byte(secret), budget: budget}
}

func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now
	if h.now != nil {
		now = h.now
	}
	received := now()
	if r.Method != http.MethodPost {
		h.m.reject("method")
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > MaxWebhookBytes {
		h.tooLarge(w, r)
		return
	}
	sig, ok := strings.CutPrefix(r.Header.Get(github.SHA256SignatureHeader), "sha256=")
	if !ok {
		h.m.reject("signature")
		http.Error(w, "missing X-Hub-Signature-256", http.StatusBadRequest)
		return
	}
	want, err := hex.DecodeString(sig)
	if err != nil || len(want) != sha256.Size {
		h.m.reject("signature")
		http.Error(w, "malformed X-Hub-Signature-256", http.StatusBadRequest)
		return
	}
	body, mac, ok := h.readVerified(w, r, want)
	if !ok {
		return
	}
	ctx := context.WithValue(h.log.WithContext(r.Context()), receivedAtKey{}, received)
	ctx = context.WithValue(ctx, verifiedKey{}, macDigest(r.Header.Get("X-GitHub-Event"), mac))
	r = r.WithContext(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	// The signature is checked; the dispatcher, which has no secret, would otherwise hash the
	// body again (and fall back to SHA-1 when it is missing).
	r.Header = r.Header.Clone()
	r.Header.Del(github.SHA256SignatureHeader)
	r.Header.Del(github.SHA1SignatureHeader)
	h.next.ServeHTTP(w, r)
}

// readVerified reads the body within the unverified budget and checks its HMAC as it goes, and
// returns the body with its MAC. The budget is given back once the signature is checked: a
// verified body is GitHub's.
func (h *hookHandler) readVerified(w http.ResponseWriter, r *http.Request, want []byte) ([]byte, []byte, bool) {
	var held int64
	defer func() { h.budget.give(held) }()
	grow := func(n int64) bool {
		if !h.budget.take(n - held) {
			return false
		}
		held = n
		return true
	}
	var buf []byte
	if r.ContentLength > 0 {
		if !grow(r.ContentLength) {
			h.busy(w)
			return nil, nil, false
		}
		buf = make([]byte, 0, r.ContentLength)
	}
	mac := hmac.New(sha256.New, h.secret)
	// The body is read straight into buf; when buf is full a one-byte probe tells the end of a
	// body of exactly its declared length from one that needs a larger buffer.
	var probe [1]byte
	for {
		var n int
		var err error
		if len(buf) < cap(buf) {
			n, err = r.Body.Read(buf[len(buf):cap(buf)])
			mac.Write(buf[len(buf) : len(buf)+n])
			buf = buf[:len(buf)+n]
		} else if n, err = r.Body.Read(probe[:]); n > 0 {
			if len(buf)+n > MaxWebhookBytes {
				h.tooLarge(w, r)
				return nil, nil, false
			}
			// A body without a length grows in doubling steps, each taken from the budget first.
			c := min(max(2*cap(buf), len(buf)+n, 64<<10), MaxWebhookBytes)
			if !grow(int64(c)) {
				h.busy(w)
				return nil, nil, false
			}
			nb := make([]byte, len(buf), c)
			copy(nb, buf)
			buf = append(nb, probe[:n]...)
			mac.Write(probe[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			h.m.reject("payload")
			http.Error(w, "could not read the body", http.StatusBadRequest)
			return nil, nil, false
		}
	}
	sum := mac.Sum(nil)
	if !hmac.Equal(sum, want) {
		h.m.reject("signature")
		http.Error(w, "invalid webhook signature", http.StatusBadRequest)
		return nil, nil, false
	}
	return buf, sum, true
}

// busy answers 503 with Retry-After without reading the body: the bytes in flight of unverified
// requests are at their bound.
func (h *hookHandler) busy(w http.ResponseWriter) {
	h.m.reject("busy")
	h.log.Warn().Int64("limit", h.budget.limit).Msg("webhook refused: unverified request bodies at their memory bound")
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	http.Error(w, "too many webhook bodies in flight, retry later", http.StatusServiceUnavailable)
}

// tooLarge answers 413 and then reads (and discards) what the client is still sending, a bounded
// amount for a bounded time, so the client gets to read the answer instead of a reset.
func (h *hookHandler) tooLarge(w http.ResponseWriter, r *http.Request) {
	h.m.reject("too-large")
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex()
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("payload too large: webhook bodies are limited to %d bytes", MaxWebhookBytes), http.StatusRequestEntityTooLarge)
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.CopyN(io.Discard, r.Body, maxDrainBytes)
}
