package disclosure

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/internal/digest"
)

const corpusDir = "testdata/proofbundle"

type expectedResults struct {
	HousePublicKeyHex   string `json:"house_public_key_hex"`
	DefaultPolicyDigest string `json:"default_policy_digest"`
	Receipts            map[string]struct {
		ReceiptDigest         string   `json:"receipt_digest"`
		FileSHA256            string   `json:"file_sha256"`
		LimitationCodesDerive []string `json:"limitationCodes_derived"`
		Subject               struct {
			Digest struct {
				SHA256 string `json:"sha256"`
			} `json:"digest"`
			Name string `json:"name"`
		} `json:"subject"`
		Without        map[string]any `json:"verify_any_house_key__without_expected_subject"`
		With           map[string]any `json:"verify_any_house_key__with_own_subject_digest"`
		PublishedBlock *struct {
			File       string `json:"file"`
			Signed     string `json:"disclosureCoreDigest_signed"`
			OfFile     string `json:"disclosureCoreDigest_of_block_file"`
			Match      bool   `json:"match"`
			ReceiptHex string `json:"receipt_line_value"`
		} `json:"published_block"`
	} `json:"receipts"`
	Chain struct {
		InputOrder []string        `json:"input_order"`
		Resolution json.RawMessage `json:"resolve_receipt_chain"`
	} `json:"published_chain_inspect_ai_5141"`
}

func loadExpected(t testing.TB) *expectedResults {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected-results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var er expectedResults
	if err := json.Unmarshal(raw, &er); err != nil {
		t.Fatal(err)
	}
	return &er
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reportMap renders a report as the generic JSON the expected results use.
func reportMap(t *testing.T, r *Report) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if a, ok := m["automation"].(map[string]any); ok {
		m["automationBlockers"] = a["automationBlockers"]
		m["safeForAutomation"] = a["safeForAutomation"]
	}
	return m
}

func TestPublishedReceiptsMatchExpectedResults(t *testing.T) {
	er := loadExpected(t)
	house, err := ParsePublicKey([]byte(er.HousePublicKeyHex))
	if err != nil {
		t.Fatal(err)
	}
	if got := DefaultPolicy().Digest; got != er.DefaultPolicyDigest {
		t.Fatalf("default policy digest %s, want %s", got, er.DefaultPolicyDigest)
	}
	if len(er.Receipts) != 10 {
		t.Fatalf("expected 10 published receipts, found %d", len(er.Receipts))
	}
	for name, want := range er.Receipts {
		t.Run(name, func(t *testing.T) {
			env := readFile(t, filepath.Join(corpusDir, "published-receipts", name))
			for _, tc := range []struct {
				label    string
				expected string
				want     map[string]any
			}{
				{"without expectation", "", want.Without},
				{"with own subject digest", want.Subject.Digest.SHA256, want.With},
			} {
				rep := Verify(env, Options{PublicKey: house, ExpectedSubjectDigest: tc.expected, Policy: DefaultPolicy()})
				got := reportMap(t, rep)
				for k, w := range tc.want {
					if gb, _ := json.Marshal(got[k]); string(gb) != mustJSON(t, w) {
						t.Errorf("%s: %s = %s, want %s", tc.label, k, gb, mustJSON(t, w))
					}
				}
				if rep.ReceiptDigest != want.ReceiptDigest {
					t.Errorf("receipt digest %s, want %s", rep.ReceiptDigest, want.ReceiptDigest)
				}
				if rep.SubjectName != want.Subject.Name {
					t.Errorf("subject name %s, want %s", rep.SubjectName, want.Subject.Name)
				}
			}
			if want.PublishedBlock != nil {
				blk := string(readFile(t, filepath.Join(corpusDir, "published-receipts", want.PublishedBlock.File)))
				d, err := block.DisclosureCoreDigest(blk)
				if err != nil {
					t.Fatal(err)
				}
				if d != want.PublishedBlock.OfFile || (d == want.PublishedBlock.Signed) != want.PublishedBlock.Match {
					t.Errorf("block disclosure core %s, want %s (match %v)", d, want.PublishedBlock.OfFile, want.PublishedBlock.Match)
				}
				lines, err := block.Parse(blk)
				if err != nil {
					t.Fatal(err)
				}
				if got := block.ReceiptDigest(lines); got != want.PublishedBlock.ReceiptHex {
					t.Errorf("Receipt line %s, want %s", got, want.PublishedBlock.ReceiptHex)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPublishedChainUsesFileHashesAndStaysUnresolved(t *testing.T) {
	er := loadExpected(t)
	var envs []any
	verified := map[string]bool{}
	keys := []string{"proofbundle_185.r2.publickey.hex", "inspect_ai_5141.publickey.hex"}
	for _, name := range er.Chain.InputOrder {
		raw := readFile(t, filepath.Join(corpusDir, "published-receipts", name))
		for _, k := range keys {
			pub, err := ParsePublicKey(readFile(t, filepath.Join(corpusDir, "published-receipts", k)))
			if err != nil {
				t.Fatal(err)
			}
			if r := VerifyVersion(V01, raw, Options{PublicKey: pub}); isTrue(r.CryptoOK) {
				verified[r.ReceiptDigest] = true
			}
		}
		var env any
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	got, err := json.Marshal(ResolveChain(envs, verified))
	if err != nil {
		t.Fatal(err)
	}
	var gotM, wantM map[string]any
	_ = json.Unmarshal(got, &gotM)
	_ = json.Unmarshal(er.Chain.Resolution, &wantM)
	delete(gotM, "note")
	for k, w := range wantM {
		if mustJSON(t, gotM[k]) != mustJSON(t, w) {
			t.Errorf("%s = %s, want %s", k, mustJSON(t, gotM[k]), mustJSON(t, w))
		}
	}
	if !slices.Contains(gotM["missing_predecessors"].([]any), "ce6921fc9ea0d06da05571a9f28e21dffce00e3e7a691370bd000a54e1d1a8c5") {
		t.Error("the file hash cited by r2 must be a missing predecessor")
	}
}

// TestPublishedDefects pins the two known defects of the published data: the 224.r1 block does
// not reproduce its signed disclosureCoreDigest although its wording re-renders exactly from the
// predicate, and inspect_ai_5141 is signed by its own key, not the house key.
func TestPublishedDefects(t *testing.T) {
	dir := filepath.Join(corpusDir, "published-receipts")
	house, _ := ParsePublicKey(readFile(t, filepath.Join(dir, "proofbundle_185.r2.publickey.hex")))
	blk := string(readFile(t, filepath.Join(dir, "proofbundle_224.r1.block.md")))
	r := Verify(readFile(t, filepath.Join(dir, "proofbundle_224.r1.receipt.json")), Options{PublicKey: house, Body: &blk})
	if r.DisclosureCoreDigestMatch != MatchMismatch || r.VisibleBlockRendering != MatchMatch || !isTrue(r.CryptoOK) {
		t.Fatalf("224.r1: disclosure=%s visible=%s", r.DisclosureCoreDigestMatch, r.VisibleBlockRendering)
	}
	blk = string(readFile(t, filepath.Join(dir, "proofbundle_185.block.md")))
	r = Verify(readFile(t, filepath.Join(dir, "proofbundle_185.receipt.json")), Options{PublicKey: house, Body: &blk})
	if r.DisclosureCoreDigestMatch != MatchMatch || r.VisibleBlockRendering != MatchMatch {
		t.Fatalf("185: disclosure=%s visible=%s", r.DisclosureCoreDigestMatch, r.VisibleBlockRendering)
	}
	own, _ := ParsePublicKey(readFile(t, filepath.Join(dir, "inspect_ai_5141.publickey.hex")))
	env := readFile(t, filepath.Join(dir, "inspect_ai_5141.receipt.json"))
	subject := VerifyVersion(V01, env, Options{PublicKey: own}).SubjectDigest
	if r := Verify(env, Options{PublicKey: own, ExpectedSubjectDigest: subject}); !r.OK || r.PredicateVersionStatus != VersionLegacy {
		t.Fatalf("inspect_ai_5141 under its own key: %v", r.Errors)
	}
}

// TestUpstreamRegressionTable replays upstream's frozen v0.1 table (measured with proofbundle
// 5.1.0): the direct v0.1 verifier with the house key, without and with the receipt's own
// subject digest.
func TestUpstreamRegressionTable(t *testing.T) {
	var table struct {
		PubkeySHA256Prefix string `json:"pubkey_sha256_16"`
		Receipts           map[string]struct {
			With    map[string]any `json:"mit_eigenem_digest"`
			Without map[string]any `json:"ohne_erwartung"`
			Subject string         `json:"subject_digest_aus_nutzlast"`
		} `json:"receipts"`
	}
	raw := readFile(t, filepath.Join(corpusDir, "agent_review", "_regression", "v01_unter_510.json"))
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	keyText := readFile(t, filepath.Join(corpusDir, "published-receipts", "proofbundle_185.r2.publickey.hex"))
	if got := digest.SHA256Hex(bytes.TrimSpace(keyText))[:16]; got != table.PubkeySHA256Prefix {
		t.Fatalf("house key fingerprint %s, table has %s", got, table.PubkeySHA256Prefix)
	}
	house, _ := ParsePublicKey(keyText)
	rows := 0
	for name, want := range table.Receipts {
		env := readFile(t, filepath.Join(corpusDir, "published-receipts", name))
		for expected, w := range map[string]map[string]any{"": want.Without, want.Subject: want.With} {
			got := reportMap(t, VerifyVersion(V01, env, Options{PublicKey: house, ExpectedSubjectDigest: expected}))
			for k, v := range w {
				if mustJSON(t, got[k]) != mustJSON(t, v) {
					t.Errorf("%s (expected %q): %s = %s, table has %s", name, expected, k, mustJSON(t, got[k]), mustJSON(t, v))
				}
			}
			rows++
		}
	}
	if rows != 12 {
		t.Errorf("%d rows, want 12", rows)
	}
}
