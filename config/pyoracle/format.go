package pyoracle

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// IntHex writes n as Python's hex() does, the oracle's form of an integer.
func IntHex(n *big.Int) string {
	s := "0x" + new(big.Int).Abs(n).Text(16)
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// FloatRepr writes f as Python's repr() does: the shortest round-tripping digits, in fixed
// notation when the decimal point falls within 16 digits, else in exponent notation.
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	if f == 0 {
		return sign + "0.0"
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e") // d.ddde±XX
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		}
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
	out := digits[:1]
	if len(digits) > 1 {
		out += "." + digits[1:]
	}
	es := "+"
	if x < 0 {
		es, x = "-", -x
	}
	return sign + out + "e" + es + strconv.Itoa(x/10) + strconv.Itoa(x%10)
}
