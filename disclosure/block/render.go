package block

import (
	"errors"
	"regexp"
	"strings"
)

// Labels of the block lines, in order.
const (
	LabelInvolvement = "Involvement"
	LabelReview      = "Review"
	LabelFindings    = "Findings"
	LabelAssurance   = "Assurance"
	LabelLimits      = "Limits"
	LabelReceipt     = "Receipt"
)

// Fields are the values of one block. Receipt is a 64-hex digest or empty for no Receipt line.
type Fields struct {
	Involvement string
	Review      string
	Findings    string
	Assurance   string
	Limits      string
	Receipt     string
}

var reHex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Render returns the block: begin marker, five lines, the optional Receipt line and the end
// marker, joined by LF with no trailing newline.
func Render(f Fields) (string, error) {
	if f.Receipt != "" && !reHex64.MatchString(f.Receipt) {
		return "", errors.New("receipt digest must be 64 lowercase hex characters")
	}
	for _, v := range []string{f.Involvement, f.Review, f.Findings, f.Assurance, f.Limits} {
		if strings.Contains(v, Begin) || strings.Contains(v, End) {
			return "", errors.New("a block value must not contain a disclosure marker")
		}
	}
	var b strings.Builder
	line := func(label, value string) {
		b.WriteString("\n- **")
		b.WriteString(label)
		b.WriteString(":** ")
		b.WriteString(value)
	}
	b.WriteString(Begin)
	line(LabelInvolvement, f.Involvement)
	line(LabelReview, f.Review)
	line(LabelFindings, f.Findings)
	line(LabelAssurance, f.Assurance)
	line(LabelLimits, f.Limits)
	if f.Receipt != "" {
		line(LabelReceipt, "`sha256:"+f.Receipt+"`")
	}
	b.WriteString("\n")
	b.WriteString(End)
	return b.String(), nil
}

// Line is one "- **Label:** value" line of a parsed block.
type Line struct {
	Label string
	Value string
}

// Parse reads the block of body back into its lines, in order. Lines that do not have the
// block-line form are returned with an empty Label so a caller can see them.
func Parse(body string) ([]Line, error) {
	inner, err := Inner(body)
	if err != nil {
		return nil, err
	}
	inner = strings.Trim(inner, "\n")
	if inner == "" {
		return nil, nil
	}
	var out []Line
	for _, raw := range strings.Split(inner, "\n") {
		rest, ok := strings.CutPrefix(raw, "- **")
		if !ok {
			out = append(out, Line{Value: raw})
			continue
		}
		label, value, ok := strings.Cut(rest, ":** ")
		if !ok || label == "" {
			out = append(out, Line{Value: raw})
			continue
		}
		out = append(out, Line{Label: label, Value: value})
	}
	return out, nil
}

// ReceiptDigest returns the digest of a parsed Receipt line, or "" when there is none.
func ReceiptDigest(lines []Line) string {
	for _, l := range lines {
		if l.Label == LabelReceipt {
			v := strings.TrimSuffix(strings.TrimPrefix(l.Value, "`sha256:"), "`")
			if reHex64.MatchString(v) {
				return v
			}
		}
	}
	return ""
}
