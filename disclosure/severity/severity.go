// Package severity is the ASDD severity vocabulary and its one order, shared by receipts,
// observations and the review pipeline.
package severity

// The severities, most severe first.
const (
	Critical = "critical"
	High     = "high"
	Medium   = "medium"
	Low      = "low"
	Info     = "info"
)

// Rank orders severities: critical is 4, info 0, anything unknown -1.
func Rank(s string) int {
	switch s {
	case Critical:
		return 4
	case High:
		return 3
	case Medium:
		return 2
	case Low:
		return 1
	case Info:
		return 0
	}
	return -1
}
