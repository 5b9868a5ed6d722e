package openai_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
)

var (
	receiptKey = ed25519.NewKeyFromSeed(make([]byte, 32))
	witnessKey = ed25519.NewKeyFromSeed([]byte("witness-key-seed-for-tests-only!"))
)

// servedModel answers every call with the same exact bytes.
type servedModel struct {
	body []byte
}

func newServedModel(t *testing.T, message string) *servedModel {
	content := strings.Replace(reviewJSON("looked", "code=request-changes"), "Deleting the nil check", message, 1)
	b, err := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion", "model": "served-model-9",
		"usage":   map[string]any{"prompt_tokens": 1020, "completion_tokens": 30, "total_tokens": 1050},
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &servedModel{body: b}
}

func observedReview(t *testing.T, m *servedModel) (*review.Decision, string) {
	t.Helper()
	srv := newModel(t, func(modelfake.Request) modelfake.Reply { return modelfake.Reply{Raw: m.body} })
	d, err := pipeline(t, srv, nil).Review(context.Background(), subject(), repoConfig("code"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	return d, u.Host
}

func receiptFor(t *testing.T, d *review.Decision) *disclosure.Receipt {
	t.Helper()
	disc, err := disclosure.Disclose(subject().Body, review.Predicate(d, subject(), time.Now()), disclosure.Signer{Key: receiptKey})
	if err != nil {
		t.Fatal(err)
	}
	return disc.Receipt
}

// The observation of a model call names the endpoint, the model asked for and the model that
// answered, and the digests of the exact bodies on the wire; a receipt composed from a
// response with one byte changed does not match it.
func TestModelCallObservation(t *testing.T) {
	m := newServedModel(t, "Deleting the nil check")
	d, host := observedReview(t, m)
	rc := receiptFor(t, d)
	obs, err := review.SignObservation(d, rc, "test", observation.Signer{Key: witnessKey}, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := observation.Options{WitnessKey: witnessKey.Public().(ed25519.PublicKey), ReceiptKey: receiptKey.Public().(ed25519.PublicKey),
		Receipt: rc.Envelope, Expected: []observation.Expectation{{Name: "openai", EndpointHost: host, ModelResponded: "served-model-9"}}}
	res := observation.Verify(obs.Envelope, opts)
	if res.RunnerObservation != observation.Match {
		t.Fatalf("%s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	c := res.Statement.Calls[0]
	rt := c.Runtime
	if rt.Kind != observation.KindOpenAI || rt.EndpointHost != host || rt.ModelRequested != "reviewer-model-7" || rt.ModelResponded != "served-model-9" {
		t.Fatalf("runtime %+v", rt)
	}
	// One call (no lens of the policy needs the independent pass): one exchange of exactly the
	// served bytes.
	sum := sha256.Sum256(m.body)
	if len(c.Exchanges) != 1 {
		t.Fatalf("exchanges %+v", c.Exchanges)
	}
	for _, e := range c.Exchanges {
		if e.Response == nil || e.Response.SHA256 != hex.EncodeToString(sum[:]) || e.Response.Size != int64(len(m.body)) || e.Status != 200 || e.Request.Size == 0 {
			t.Fatalf("exchange %+v", e)
		}
	}
	if c.Tokens == nil || c.Tokens.Input != 1020 || c.Tokens.Output != 30 {
		t.Fatalf("tokens %+v", c.Tokens)
	}

	t.Run("a response byte changed", func(t *testing.T) {
		changed := newServedModel(t, "Deleting the nil chock")
		if len(changed.body) != len(m.body) {
			t.Fatal("the change must keep the length")
		}
		d2, _ := observedReview(t, changed)
		rc2 := receiptFor(t, d2)
		obs2, err := review.SignObservation(d, rc2, "test", observation.Signer{Key: witnessKey}, 0)
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Receipt = rc2.Envelope
		res := observation.Verify(obs2.Envelope, o)
		if res.RunnerObservation != observation.Mismatch || !slices.Equal(res.ReasonCodes, []string{observation.CodeFindingsDiffer}) {
			t.Fatalf("%s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
		}
	})
	t.Run("another model answered", func(t *testing.T) {
		o := opts
		o.Expected = []observation.Expectation{{Name: "openai", ModelResponded: "reviewer-model-7"}}
		res := observation.Verify(obs.Envelope, o)
		if !slices.Equal(res.ReasonCodes, []string{observation.CodeRuntimeDiffers}) {
			t.Fatalf("%v", res.ReasonCodes)
		}
	})
}
