package disclosure

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// markerVersion picks the version a predicate declares through its members: a verifier block
// means v0.3, v0.2-only members mean v0.2, otherwise v0.1.
func markerVersion(p map[string]any) Version {
	if prod, ok := asObj(p["producer"]); ok && has(prod, "verifier") {
		return V03
	}
	d, _ := asObj(p["declaration"])
	sc, _ := asObj(p["subjectContext"])
	if has(d, "timeClaims") || has(p, "limitationCodes") || has(sc, "disclosureCoreDigest") {
		return V02
	}
	return V01
}

// BlockFields derives the block values from a predicate tree, after validating it under the
// version its members declare. An invalid predicate is refused.
func BlockFields(pred any) (block.Fields, error) {
	p, ok := asObj(pred)
	if !ok {
		return block.Fields{}, fmt.Errorf("render: predicate must be an object")
	}
	if is := ValidatePredicate(p, markerVersion(p)); len(is) > 0 {
		return block.Fields{}, &RefusedError{Issues: is}
	}
	return blockFields(p), nil
}

func blockFields(p map[string]any) block.Fields {
	d, _ := asObj(p["declaration"])
	var who []string
	authoring, _ := asArr(d["authoring"])
	for _, a := range authoring {
		m, _ := asObj(a)
		if s, ok := m["assertedBy"].(string); ok && !slices.Contains(who, s) {
			who = append(who, s)
		}
	}
	slices.Sort(who) // Go string order is code point order
	involvement := "not stated"
	if len(who) > 0 {
		involvement = strings.Join(who, ", ")
	}
	runs, _ := asArr(d["reviewRuns"])
	cov, _ := asObj(p["coverage"])
	status, ok := cov["status"].(string)
	if !ok {
		status = CoverageUnknown
	}
	findings, _ := asArr(d["findings"])
	n := len(findings)
	listed := fmt.Sprintf("%d total", n)
	if total, ok := intValue(d["findingsTotal"]); ok && total != int64(n) {
		listed = fmt.Sprintf("%d listed of %d recorded", n, total)
	}
	counts := map[string]int{}
	for _, f := range findings {
		m, _ := asObj(f)
		disp, ok := m["disposition"].(string)
		if !ok {
			disp = "open"
		}
		counts[disp]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, strconv.Itoa(counts[k])+" "+k)
	}
	breakdown := "none recorded"
	if len(parts) > 0 {
		breakdown = strings.Join(parts, ", ")
	}
	var limits []string
	lim, _ := asArr(p["limitations"])
	for _, l := range lim {
		s, _ := l.(string)
		limits = append(limits, s)
	}
	return block.Fields{
		Involvement: involvement,
		Review:      fmt.Sprintf("%d run(s), coverage %s", len(runs), status),
		Findings:    listed + " (" + breakdown + ")",
		Assurance:   weakestRung(p) + " \u2014 not independently witnessed",
		Limits:      strings.Join(limits, "; "),
	}
}

// RenderBlock renders the disclosure block of a predicate. receiptDigest adds the Receipt line
// when not empty; any 64-hex value gives the same disclosureCoreDigest, so a placeholder may be
// used before signing and the real value after.
func RenderBlock(pred any, receiptDigest string) (string, error) {
	f, err := BlockFields(pred)
	if err != nil {
		return "", err
	}
	f.Receipt = receiptDigest
	return block.Render(f)
}

// RenderBlockJSON renders the block of a predicate given as JSON.
func RenderBlockJSON(predicateJSON []byte, receiptDigest string) (string, error) {
	v, err := jcs.Parse(predicateJSON)
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return RenderBlock(v, receiptDigest)
}

// visibleBlockRendering compares the block a reader sees with the block the signed predicate
// renders to (every line but the Receipt value, which is a locator only).
func visibleBlockRendering(pred map[string]any, body string) string {
	lines, err := block.Parse(body)
	if err != nil {
		return MatchNotMeasurable
	}
	want, err := block.Render(blockFields(pred))
	if err != nil {
		return MatchNotMeasurable
	}
	wantLines, _ := block.Parse(want)
	var got []block.Line
	for _, l := range lines {
		if l.Label != block.LabelReceipt {
			got = append(got, l)
		}
	}
	if slices.Equal(got, wantLines) {
		return MatchMatch
	}
	return MatchMismatch
}

// CompactLine is the optional input of RenderCompact.
type CompactLine struct {
	ReceiptURL string // where the receipt file can be fetched
	LogURL     string // a transparency log entry, if any
	Witnessed  bool   // the log entry is in a witnessed checkpoint
	HowToCheck string // free text appended last
}

// RenderCompact renders the single-line form of a receipt reference (for a comment or a
// summary): "- " and the parts joined by " · ". receiptDigest is 64 hex characters.
func RenderCompact(pred any, receiptDigest string, c CompactLine) (string, error) {
	if _, err := BlockFields(pred); err != nil {
		return "", err
	}
	if !isLowerHex(64, 64, receiptDigest) {
		return "", fmt.Errorf("render: receipt digest must be 64 lowercase hex characters")
	}
	p := pred.(map[string]any)
	d, _ := asObj(p["declaration"])
	findings, _ := asArr(d["findings"])
	count := fmt.Sprintf("%d findings", len(findings))
	if total, ok := intValue(d["findingsTotal"]); ok && total != int64(len(findings)) {
		count = fmt.Sprintf("%d listed of %d recorded findings", len(findings), total)
	}
	parts := []string{
		"Agent review receipt: [" + receiptDigest[:12] + "](" + c.ReceiptURL + ")",
		"`sha256:" + receiptDigest + "`",
		count,
		"assurance " + weakestRung(p) + ", not independently witnessed",
	}
	if c.LogURL != "" {
		entry := "[transparency log entry](" + c.LogURL + ")"
		if !c.Witnessed {
			entry += ", not yet in a witnessed checkpoint"
		}
		parts = append(parts, entry)
	}
	if c.HowToCheck != "" {
		parts = append(parts, c.HowToCheck)
	}
	return "- " + strings.Join(parts, " \u00b7 "), nil
}
