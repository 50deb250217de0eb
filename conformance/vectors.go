package conformance

import (
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

//go:embed vectors/*.json
var vectorFiles embed.FS

// Mode selects the codec a vector exercises.
type Mode string

// Codec modes of the protocol.
const (
	ModeFold   Mode = "fold"
	ModeNoFold Mode = "no-fold"
)

// Vector is one canonical-JSON case.
type Vector struct {
	Name     string            `json:"name"`
	Mode     Mode              `json:"mode"`
	Input    *string           `json:"input,omitempty"`
	InputHex *string           `json:"input_hex,omitempty"`
	Canon    *string           `json:"canonical_hex,omitempty"`
	Prints   map[string]string `json:"fingerprints,omitempty"`
	Reject   string            `json:"rejection,omitempty"`
	Note     string            `json:"note,omitempty"`
}

// Bytes returns the vector's input bytes.
func (v Vector) Bytes() ([]byte, error) {
	switch {
	case v.Input != nil && v.InputHex == nil:
		return []byte(*v.Input), nil
	case v.InputHex != nil && v.Input == nil:
		return hex.DecodeString(*v.InputHex)
	}
	return nil, fmt.Errorf("vector %q: exactly one of input and input_hex is required", v.Name)
}

// CanonicalFile is vectors/canonical.json.
type CanonicalFile struct {
	Format        string   `json:"format"`
	FormatVersion int      `json:"format_version"`
	Vectors       []Vector `json:"vectors"`
}

// NumbersFile is vectors/numbers.json.
type NumbersFile struct {
	Format        string   `json:"format"`
	FormatVersion int      `json:"format_version"`
	StaticBits    []string `json:"static_bits"`
	SerialBase    string   `json:"serial_base"`
	SerialCount   int      `json:"serial_count"`
	Expected      []struct {
		Lines  int         `json:"lines"`
		NoFold NumbersHash `json:"no_fold"`
		Fold   NumbersHash `json:"fold"`
	} `json:"expected"`
}

// NumbersHash is the SHA-256 and length of a block of number lines.
type NumbersHash struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// LoadCanonical reads the embedded canonical vectors and checks their shape.
func LoadCanonical() (*CanonicalFile, error) {
	var f CanonicalFile
	if err := load("vectors/canonical.json", "rayflow.conformance.canonical", &f, &f.Format, &f.FormatVersion); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, v := range f.Vectors {
		if seen[v.Name] {
			return nil, fmt.Errorf("conformance: duplicate vector name %q", v.Name)
		}
		seen[v.Name] = true
		if v.Mode != ModeFold && v.Mode != ModeNoFold {
			return nil, fmt.Errorf("conformance: vector %q: unknown mode %q", v.Name, v.Mode)
		}
		if (v.Canon == nil) == (v.Reject == "") {
			return nil, fmt.Errorf("conformance: vector %q: exactly one of canonical_hex and rejection is required", v.Name)
		}
		if _, err := v.Bytes(); err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
	}
	return &f, nil
}

// LoadNumbers reads the embedded number-sequence description.
func LoadNumbers() (*NumbersFile, error) {
	var f NumbersFile
	if err := load("vectors/numbers.json", "rayflow.conformance.numbers", &f, &f.Format, &f.FormatVersion); err != nil {
		return nil, err
	}
	return &f, nil
}

func load(name, format string, into any, gotFormat *string, gotVersion *int) error {
	b, err := vectorFiles.ReadFile(name)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("conformance: %s: %w", name, err)
	}
	if *gotFormat != format || *gotVersion != 1 {
		return fmt.Errorf("conformance: %s: format %q version %d, want %q version 1", name, *gotFormat, *gotVersion, format)
	}
	return nil
}
