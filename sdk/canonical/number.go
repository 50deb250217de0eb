package canonical

import (
	"math"
	"math/big"
	"strconv"
)

// appendFloat appends f (finite) as the codec writes it: an integral value
// becomes its exact integer when folding, anything else Python's repr.
func appendFloat(dst []byte, f float64, fold bool) []byte {
	if fold && f == math.Trunc(f) {
		return appendExactInteger(dst, f)
	}
	return appendPyRepr(dst, f)
}

// appendExactInteger appends the exact decimal value of the integral double f
// (1e23 → 99999999999999991611392, -0.0 → 0).
func appendExactInteger(dst []byte, f float64) []byte {
	if f > -(1<<63) && f < 1<<63 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	var i big.Int
	new(big.Float).SetFloat64(f).Int(&i)
	return i.Append(dst, 10)
}

// appendPyRepr appends Python's repr of the finite double f: the shortest
// round-trip digits, fixed notation when the decimal exponent is in [-4, 16),
// otherwise d[.ddd]e±XX with at least two exponent digits; an integral value
// in fixed notation keeps ".0".
func appendPyRepr(dst []byte, f float64) []byte {
	var tmp [32]byte
	// Shortest digits in the form [-]d[.ddd]e±dd[d].
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	var digits [24]byte
	nd := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[nd] = e[i]
			nd++
		}
	}
	exp := 0
	for _, c := range e[i+2:] { // skip 'e' and the sign
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	d := digits[:nd]
	if exp < -4 || exp >= 16 {
		dst = append(dst, d[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= 0:
		dst = append(dst, '0', '.')
		for ; point < 0; point++ {
			dst = append(dst, '0')
		}
		return append(dst, d...)
	case point >= nd:
		dst = append(dst, d...)
		for ; point > nd; point-- {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	default:
		dst = append(dst, d[:point]...)
		dst = append(dst, '.')
		return append(dst, d[point:]...)
	}
}
