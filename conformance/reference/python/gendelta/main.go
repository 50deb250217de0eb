package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

const (
	wantVersion  = "15.0.0"
	sinceVersion = "13.0.0"
	hangulFirst  = 0xAC00
	hangulLast   = 0xD7A3

	sampleRun = 20
)

func main() {
	out := flag.String("out", "conformance/reference/python/unicode15_delta.json", "output file")
	flag.Parse()
	if unicode.Version != wantVersion {
		log.Fatalf("gendelta: unicode.Version is %s, want %s", unicode.Version, wantVersion)
	}
	if norm.Version != wantVersion {
		log.Fatalf("gendelta: norm.Version is %s, want %s", norm.Version, wantVersion)
	}
	data, err := build()
	if err != nil {
		log.Fatalf("gendelta: %v", err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		log.Fatalf("gendelta: %v", err)
	}
}

// assigned reports whether r has a General_Category other than Cn in Go's tables.
func assigned(r rune) bool {
	for name, table := range unicode.Categories {
		if len(name) == 2 && name != "Cn" && unicode.Is(table, r) {
			return true
		}
	}
	return false
}

type rangeBuilder struct {
	ranges [][]int
}

func (b *rangeBuilder) add(r rune, extra ...int) {
	n := len(b.ranges)
	if n > 0 {
		last := b.ranges[n-1]
		if last[1] == int(r)-1 && equalInts(last[2:], extra) {
			last[1] = int(r)
			return
		}
	}
	b.ranges = append(b.ranges, append([]int{int(r), int(r)}, extra...))
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func runes(s string) []int {
	var out []int
	for _, r := range s {
		out = append(out, int(r))
	}
	return out
}

func build() ([]byte, error) {
	old := rangetable.Assigned(sinceVersion)
	cur := rangetable.Assigned(wantVersion)
	if old == nil || cur == nil {
		return nil, fmt.Errorf("rangetable lacks %s or %s", sinceVersion, wantVersion)
	}
	var assignedRanges, nonchars, cccRanges, added rangeBuilder
	addedDecomp := map[string][]int{}
	var decompLines, compositeLines bytes.Buffer
	decompCount, compositeCount := 0, 0
	var newMarks []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		isAssigned := assigned(r)
		if isAssigned == unicode.Is(unicode.Cn, r) {
			return nil, fmt.Errorf("U+%04X: Cn table and the other categories disagree", r)
		}
		if isAssigned != unicode.Is(cur, r) {
			return nil, fmt.Errorf("U+%04X: unicode categories and rangetable %s disagree", r, wantVersion)
		}
		if isAssigned {
			assignedRanges.add(r)
		}
		if unicode.Is(unicode.Noncharacter_Code_Point, r) {
			if isAssigned {
				return nil, fmt.Errorf("U+%04X: noncharacter with a General_Category", r)
			}
			nonchars.add(r)
		}
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := string(r)
		ccc := int(norm.NFC.PropertiesString(s).CCC())
		if ccc != 0 {
			if !isAssigned {
				return nil, fmt.Errorf("U+%04X: unassigned with ccc %d", r, ccc)
			}
			cccRanges.add(r, ccc)
		}
		decomp := norm.NFD.PropertiesString(s).Decomposition()
		isHangul := r >= hangulFirst && r <= hangulLast
		if decomp != nil && !isHangul {
			decompCount++
			parts := make([]string, 0, 4)
			for _, d := range string(decomp) {
				parts = append(parts, fmt.Sprintf("%04X", d))
			}
			fmt.Fprintf(&decompLines, "%04X:%s\n", r, strings.Join(parts, " "))
			if norm.NFC.String(s) == s {
				compositeCount++
				fmt.Fprintf(&compositeLines, "%04X\n", r)
			}
		}
		if isAssigned && !unicode.Is(old, r) {
			added.add(r)
			if decomp != nil && !isHangul {
				addedDecomp[fmt.Sprintf("%04X", r)] = runes(string(decomp))
			}
			if ccc != 0 {
				newMarks = append(newMarks, r)
			}
		}
	}
	digest := sha256.Sum256(decompLines.Bytes())
	compositeDigest := sha256.Sum256(compositeLines.Bytes())

	samples, err := nfcSamples(newMarks)
	if err != nil {
		return nil, err
	}

	fields := []struct {
		key   string
		value any
	}{
		{"format", "rayflow.reference.unicode15-delta"},
		{"format_version", 1},
		{"generator", "go run ./conformance/reference/python/gendelta (unicode.Version and norm.Version " + wantVersion + ")"},
		{"unicode_version", unicode.Version},
		{"norm_version", norm.Version},
		{"assigned", assignedRanges.ranges},
		{"noncharacters", nonchars.ranges},
		{"ccc", cccRanges.ranges},
		{"added_since", sinceVersion},
		{"added", added.ranges},
		{"added_decompositions", addedDecomp},
		{"canonical_decompositions", map[string]any{
			"count":  decompCount,
			"format": "one line per code point with a canonical decomposition, Hangul syllables excluded, ascending: '%04X:%04X %04X ...\\n' (full decomposition, uppercase hex)",
			"sha256": hex.EncodeToString(digest[:]),
		}},
		{"primary_composites", map[string]any{
			"count":  compositeCount,
			"format": "one line per code point with a canonical decomposition that NFC leaves unchanged (not composition-excluded), Hangul syllables excluded, ascending: '%04X\\n'",
			"sha256": hex.EncodeToString(compositeDigest[:]),
		}},
		{"nfc_samples", samples},
	}
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, f := range fields {
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteString(":")
		buf.Write(v)
		if i < len(fields)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// nfcSamples returns [input, NFC(input)] pairs, as code point arrays, for strings
// that mix the combining marks added after 13.0.0 with older marks and composable
// base letters, in several orders.
func nfcSamples(newMarks []rune) ([][2][]int, error) {
	older := []rune{0x0301, 0x0308, 0x0323, 0x0327, 0x0334, 0x05B0, 0x0E38, 0x1DFA, 0x302A, 0x0F72, 0x0F71}
	bases := []rune{'a', 'e', 'o', 0x0041, 0x1100}
	var inputs []string
	for i, m := range newMarks {
		o := older[i%len(older)]
		b := bases[i%len(bases)]
		inputs = append(inputs,
			string([]rune{b, m}),
			string([]rune{b, m, o}),
			string([]rune{b, o, m}),
			string([]rune{b, m, 0x0301}),
			string([]rune{b, 0x0323, m, 0x0301}),
			string([]rune{m, 0x0323}),
			string([]rune{0x0323, m}),
		)
	}
	all := make([]rune, 0, len(newMarks)+len(older))
	all = append(all, newMarks...)
	all = append(all, older...)
	sort.Slice(all, func(i, j int) bool { return all[i] > all[j] })
	// x/text inserts U+034F after 30 consecutive non-starters (UAX #15 Stream-Safe
	// Text Format), which plain NFC does not, so runs stay well below that here.
	for lo := 0; lo < len(all); lo += sampleRun / 2 {
		hi := min(lo+sampleRun, len(all))
		run := string(all[lo:hi])
		inputs = append(inputs, "e"+run, "\u1100\u1161"+run+"\u11A8")
	}
	out := make([][2][]int, 0, len(inputs))
	for _, in := range inputs {
		if !utf8.ValidString(in) {
			return nil, fmt.Errorf("invalid sample %q", in)
		}
		got := norm.NFC.String(in)
		if strings.ContainsRune(got, 0x034F) {
			return nil, fmt.Errorf("sample %+q: x/text inserted U+034F", in)
		}
		out = append(out, [2][]int{runes(in), runes(got)})
	}
	return out, nil
}
