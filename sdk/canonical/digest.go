package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// Domain is the ASCII separator hashed, followed by one NUL byte, before the
// canonical bytes of a digest (docs/contracts.md#digests-and-fingerprints, renamed to rayflow).
type Domain string

// The digest domains of rayflow.
const (
	DomainPlan                Domain = "rayflow.workflow-plan-v1"                       // plan fingerprint, overflow source digest
	DomainDefinition          Domain = "rayflow.workflow-definition-v1"                 // definition.revision
	DomainRuntimeEnvPlan      Domain = "rayflow.runtime-env-plan-v1"                    // RuntimeEnv plan digest
	DomainTrust               Domain = "rayflow.workflow-plan-trust-v1"                 // RuntimeEnv trust digest
	DomainRuntimeEnvTransport Domain = "rayflow.runtime-env-plan-transport-v1"          // RuntimeEnv transport digest
	DomainCompiledSession     Domain = "rayflow-compiled-session-v1"                    // compiled session graph key
	DomainTopologyPage        Domain = "rayflow:workflow-progress:topology-page:v1"     // topology page (bare hex)
	DomainTopologyManifest    Domain = "rayflow:workflow-progress:topology-manifest:v1" // topology manifest (bare hex)
	DomainNodeDetail          Domain = "rayflow:workflow-progress:node-detail:v1"       // node detail (bare hex)
)

// Domains lists every rayflow digest domain.
var Domains = []Domain{
	DomainPlan, DomainDefinition, DomainRuntimeEnvPlan, DomainTrust, DomainRuntimeEnvTransport,
	DomainCompiledSession, DomainTopologyPage, DomainTopologyManifest, DomainNodeDetail,
}

// ErrInvalidDomain is returned for a domain that is empty or not printable ASCII.
var ErrInvalidDomain = errors.New("canonical: domain must be non-empty printable ASCII")

// Validate checks that d can serve as a separator.
func (d Domain) Validate() error {
	if d == "" {
		return ErrInvalidDomain
	}
	for i := 0; i < len(d); i++ {
		if d[i] < 0x20 || d[i] > 0x7E {
			return fmt.Errorf("%w: byte 0x%02x at %d", ErrInvalidDomain, d[i], i)
		}
	}
	return nil
}

// Digest is a SHA-256 sum.
type Digest [sha256.Size]byte

// String renders "sha256:" and 64 lowercase hex digits (71 characters).
func (d Digest) String() string { return "sha256:" + d.Hex() }

// Hex renders the bare 64 lowercase hex digits.
func (d Digest) Hex() string { return hex.EncodeToString(d[:]) }

// ParseDigest accepts the "sha256:<64 hex>" form.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return d, fmt.Errorf("canonical: digest %q is not sha256:<64 lowercase hex>", s)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("canonical: digest %q: %w", s, err)
	}
	return d, nil
}

// Sum hashes the domain, one NUL byte and the canonical bytes b.
func (d Domain) Sum(b []byte) Digest {
	h := d.hasher()
	h.Write(b)
	var out Digest
	h.Sum(out[:0])
	return out
}

func (d Domain) hasher() hash.Hash {
	h := sha256.New()
	h.Write([]byte(d))
	h.Write([]byte{0})
	return h
}

// Digest hashes the canonical form of v under c, streaming, so that even an
// uncapped value is never held whole in memory.
func (c Codec) Digest(d Domain, v any) (Digest, error) {
	if err := d.Validate(); err != nil {
		return Digest{}, err
	}
	h := d.hasher()
	var out Digest
	if _, err := c.Encode(h, v); err != nil {
		return out, err
	}
	h.Sum(out[:0])
	return out, nil
}

// Fingerprint returns the digest of the V1 canonical form of v, with its
// canonical bytes.
func Fingerprint(d Domain, v any) (Digest, []byte, error) {
	if err := d.Validate(); err != nil {
		return Digest{}, nil, err
	}
	b, err := V1.Marshal(v)
	if err != nil {
		return Digest{}, nil, err
	}
	return d.Sum(b), b, nil
}

// NodeKey is the bare hex SHA-256 of a node id's UTF-8 bytes (no domain).
func NodeKey(nodeID string) string {
	s := sha256.Sum256([]byte(nodeID))
	return hex.EncodeToString(s[:])
}

// MetricsOmissionMarker returns the {"_omitted":"sha256:<hex>"} object that
// replaces a metrics mapping whose canonical bytes are over budget.
func MetricsOmissionMarker(canonicalMetrics []byte) map[string]any {
	s := sha256.Sum256(canonicalMetrics)
	return map[string]any{"_omitted": Digest(s).String()}
}
