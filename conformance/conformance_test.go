package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// pythonReference is the command line of the independent Python reference.
func pythonReference(t *testing.T) Command {
	t.Helper()
	// Resolve the real interpreter: version-manager shims cost a shell
	// start per vector.
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3 is required for the reference implementation: %v", err)
	}
	py := strings.TrimSpace(string(out))
	script, err := filepath.Abs("reference/python/rayflow_canon.py")
	if err != nil {
		t.Fatal(err)
	}
	return Command{Line: py + " " + script}
}

// buildCLI builds the rayflow binary for command-line conformance.
func buildCLI(t *testing.T) Command {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rayflow")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/rayflow/rayflow/tools/rayflow").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return Command{Line: bin}
}

func runAll(t *testing.T, impl Impl, numbers int) {
	t.Helper()
	rep, err := Run(context.Background(), impl, Options{MaxNumberLines: numbers, Parallel: 2 * runtime.NumCPU()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.Write(&buf)
	if !rep.OK() {
		t.Fatalf("\n%s", buf.String())
	}
	t.Log(strings.TrimSpace(buf.String()))
}

func TestVectorsLoad(t *testing.T) {
	t.Parallel()
	cf, err := LoadCanonical()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Vectors) < 150 {
		t.Fatalf("only %d canonical vectors", len(cf.Vectors))
	}
	rules := map[string]bool{}
	for _, v := range cf.Vectors {
		rules[string(v.Mode)+"/"+v.Reject] = true
	}
	// Every rule of the protocol is exercised at least once.
	for _, r := range []string{"syntax", "invalid_utf8", "lone_surrogate", "control_character", "duplicate_key", "non_finite", "integer_digits", "depth"} {
		for _, m := range []Mode{ModeFold, ModeNoFold} {
			if !rules[string(m)+"/"+r] {
				t.Errorf("no %s vector rejecting %s", m, r)
			}
		}
	}
	for _, r := range []string{"object_entries", "array_items", "string_length", "key_empty", "key_length", "duplicate_key_nfc", "unassigned_code_point"} {
		if !rules["fold/"+r] {
			t.Errorf("no fold vector rejecting %s", r)
		}
	}
}

func TestNative(t *testing.T) {
	t.Parallel()
	runAll(t, Native{}, 100_000)
}

func TestCLI(t *testing.T) {
	t.Parallel()
	runAll(t, buildCLI(t), 100_000)
}

// TestPythonReference proves the vectors are not self-fulfilling: an
// implementation written independently from the contract passes them too.
func TestPythonReference(t *testing.T) {
	t.Parallel()
	runAll(t, pythonReference(t), 100_000)
}

// TestDifferentialRandom feeds random JSON texts, valid and invalid, to the
// Go implementation and the Python reference and requires identical answers.
func TestDifferentialRandom(t *testing.T) {
	t.Parallel()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(20261130, uint64(n)))
	inputs := make([][]byte, n)
	for i := range inputs {
		inputs[i] = randomText(r)
	}
	ref := pythonReference(t)
	for _, mode := range []Mode{ModeFold, ModeNoFold} {
		want := batch(t, ref, inputs, mode)
		mismatches := 0
		for i, in := range inputs {
			got, err := Native{}.Canon(context.Background(), in, mode)
			if err != nil {
				t.Fatal(err)
			}
			w := want[i]
			gotHex := hex.EncodeToString(got.Output)
			if got.Rejection != w.Rejection || (w.Rejection == "" && gotHex != w.Canonical) {
				mismatches++
				if mismatches <= 10 {
					t.Errorf("%s input %q:\n go:     %s %s\n python: %s %s", mode, in, got.Rejection, gotHex, w.Rejection, w.Canonical)
				}
			}
		}
		if mismatches > 0 {
			t.Fatalf("%s: %d of %d inputs differ", mode, mismatches, n)
		}
	}
}

type batchAnswer struct {
	Canonical string `json:"canonical_hex"`
	Rejection string `json:"rejection"`
}

func batch(t *testing.T, c Command, inputs [][]byte, mode Mode) []batchAnswer {
	t.Helper()
	var req bytes.Buffer
	for _, in := range inputs {
		fmt.Fprintf(&req, `{"mode":%q,"input_hex":%q}`+"\n", mode, hex.EncodeToString(in))
	}
	cmd := exec.Command("sh", "-c", c.Line+" batch")
	cmd.Stdin = &req
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s batch: %v", c.Line, err)
	}
	var answers []batchAnswer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var a batchAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("batch answer %q: %v", sc.Text(), err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(inputs) {
		t.Fatalf("batch answered %d of %d inputs", len(answers), len(inputs))
	}
	return answers
}

// Random inputs lean towards the places implementations get wrong:
// Unicode normalization, escapes, number text, key order and collisions,
// and the caps.
var (
	randomRunes = []rune{
		'a', 'Z', '0', ' ', '/', '<', '\x7f', 'é', 'Å', 'ß', '東', '😀', '\uFFFF', '\uFDD0', '\uE000', '\U0010FFFD',
		'\u0301', '\u0316', '\u0344', '\u0F73', '\u1100', '\u1161', '\u11A8', 'e', 'A', '\u030A',
		'\U00011F00', '\U0001E08F', '\U00011F41', '\u0CF3', // new in Unicode 15.0
		'\u0378', '\U000E0080', // reserved
		'\u2028', '\u00A0', '\u200D',
	}
	randomKeys = []string{"a", "b", "aa", "é", "e\u0301", "Z", "\uFFFF", "😀", "a\u0000", "", "k"}
)

func randomText(r *rand.Rand) []byte {
	var b strings.Builder
	randomValue(r, &b, 0)
	s := b.String()
	if r.IntN(40) == 0 { // an occasional raw flaw
		switch r.IntN(4) {
		case 0:
			s += " x"
		case 1:
			s = strings.Replace(s, `"`, "\"\x01", 1)
		case 2:
			s = "\xff" + s
		case 3:
			s = " \n" + s + "\t"
		}
	}
	return []byte(s)
}

func randomValue(r *rand.Rand, b *strings.Builder, depth int) {
	kind := r.IntN(10)
	if depth > 3 && kind >= 7 {
		kind = r.IntN(7)
	}
	if r.IntN(400) == 0 { // deep nesting around the caps
		n := 14 + r.IntN(5)
		b.WriteString(strings.Repeat("[", n) + "0" + strings.Repeat("]", n))
		return
	}
	switch kind {
	case 0:
		b.WriteString([]string{"null", "true", "false"}[r.IntN(3)])
	case 1, 2:
		randomNumber(r, b)
	case 3, 4, 5, 6:
		randomString(r, b)
	case 7, 8:
		b.WriteByte('[')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomValue(r, b, depth+1)
		}
		b.WriteByte(']')
	case 9:
		b.WriteByte('{')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			if r.IntN(3) == 0 {
				randomString(r, b)
			} else {
				b.WriteString(strconv.Quote(randomKeys[r.IntN(len(randomKeys))]))
			}
			b.WriteByte(':')
			randomValue(r, b, depth+1)
		}
		b.WriteByte('}')
	}
}

func randomNumber(r *rand.Rand, b *strings.Builder) {
	switch r.IntN(9) {
	case 0:
		b.WriteString(strconv.Itoa(r.IntN(2000) - 1000))
	case 1:
		b.WriteString(strings.Repeat("9", 1+r.IntN(40)))
	case 2:
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 1.5
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case 3:
		b.WriteString(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'e', r.IntN(18), 64))
	case 4:
		b.WriteString(strconv.Itoa(r.IntN(1e6)) + ".0")
	case 5:
		b.WriteString([]string{"-0", "-0.0", "0.0", "1E5", "1e16", "1e15", "1e-4", "1e-5", "5e-324", "1e23", "1.7976931348623157e308", "1e400", "-1e-400", "NaN", "-Infinity"}[r.IntN(15)])
	case 6:
		b.WriteString(strconv.FormatFloat(float64(r.IntN(1<<20))/1024, 'f', -1, 64))
	case 7:
		b.WriteString(strconv.FormatFloat(math.Ldexp(float64(r.Int64N(1<<53)), r.IntN(200)-100), 'g', -1, 64))
	case 8:
		b.WriteString(fmt.Sprintf("%d.%de%d", r.IntN(100), r.IntN(100), r.IntN(50)-25))
	}
}

func randomString(r *rand.Rand, b *strings.Builder) {
	b.WriteByte('"')
	n := r.IntN(8)
	if r.IntN(200) == 0 {
		n = 2040 + r.IntN(16) // around the string cap
	}
	for range n {
		switch r.IntN(12) {
		case 0:
			esc := []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`, `\u001F`, `\u00e9`, `\ud83d\ude00`}
			if r.IntN(30) == 0 {
				esc = []string{`\ud800`, `\udc00`, `\ud83dx`}
			}
			b.WriteString(esc[r.IntN(len(esc))])
		default:
			b.WriteRune(randomRunes[r.IntN(len(randomRunes))])
		}
	}
	b.WriteByte('"')
}
