package conformance

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"iter"
	"math"
	"strconv"

	"github.com/rayflow/rayflow/sdk/canonical"
)

// Doubles yields the IEEE-754 bit patterns of the number-line sequence
// (docs/contracts.md#number-lines-and-vectors): the
// static patterns, the serial run, then the SHA-256 chain (see numbers.json).
func (f *NumbersFile) Doubles() (iter.Seq[uint64], error) {
	static := make([]uint64, len(f.StaticBits))
	for i, h := range f.StaticBits {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("conformance: static bit pattern %q: %w", h, err)
		}
		static[i] = v
	}
	base, err := strconv.ParseUint(f.SerialBase, 16, 64)
	if err != nil {
		return nil, fmt.Errorf("conformance: serial_base %q: %w", f.SerialBase, err)
	}
	return func(yield func(uint64) bool) {
		for _, v := range static {
			if !yield(v) {
				return
			}
		}
		for i := range f.SerialCount {
			if !yield(base + uint64(i)) {
				return
			}
		}
		var block [sha256.Size]byte
		for {
			block = sha256.Sum256(block[:])
			for i := 0; i < len(block); i += 8 {
				bits := binary.LittleEndian.Uint64(block[i:])
				if v := math.Float64frombits(bits); v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					continue
				}
				if !yield(bits) {
					return
				}
			}
		}
	}, nil
}

// HashLines formats the first count doubles as "<hex bits>,<text>\n" with
// the codec's number text (V1 folds, NoFold does not) and returns the
// SHA-256 hex of the lines and their total length.
func (f *NumbersFile) HashLines(count int, c canonical.Codec) (string, int64, error) {
	seq, err := f.Doubles()
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	var n int64
	line := make([]byte, 0, 512)
	i := 0
	for bits := range seq {
		if i == count {
			break
		}
		i++
		line = strconv.AppendUint(line[:0], bits, 16)
		line = append(line, ',')
		line, err = c.AppendMarshal(line, math.Float64frombits(bits))
		if err != nil {
			return "", 0, fmt.Errorf("conformance: double %x: %w", bits, err)
		}
		line = append(line, '\n')
		h.Write(line)
		n += int64(len(line))
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
