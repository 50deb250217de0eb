package sdk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// TrustIdentity names the non-secret trust context a plan was made for;
// two deployments with different trust identities never share a plan
// fingerprint. Every set field is ≤ 256 characters.
type TrustIdentity struct {
	TrustDomain            string
	CredentialProvider     string
	CredentialProfile      string
	CredentialRevision     string
	EnvironmentRevision    string
	SchedulingRevision     string
	ServiceAccountAudience string
}

func (t TrustIdentity) plan() (plan.TrustIdentity, error) {
	var p plan.TrustIdentity
	for _, f := range []struct {
		name string
		v    string
		dst  **string
	}{
		{"TrustDomain", t.TrustDomain, &p.TrustDomain}, {"CredentialProvider", t.CredentialProvider, &p.CredentialProvider},
		{"CredentialProfile", t.CredentialProfile, &p.CredentialProfile}, {"CredentialRevision", t.CredentialRevision, &p.CredentialRevision},
		{"EnvironmentRevision", t.EnvironmentRevision, &p.EnvironmentRevision}, {"SchedulingRevision", t.SchedulingRevision, &p.SchedulingRevision},
		{"ServiceAccountAudience", t.ServiceAccountAudience, &p.ServiceAccountAudience},
	} {
		if f.v == "" {
			continue
		}
		if !utf8.ValidString(f.v) || utf8.RuneCountInString(f.v) > plan.MaxTrustFieldRunes {
			return p, &DefinitionError{Path: "security.trust_identity", Code: CodeInvalidIdentity,
				Msg: fmt.Sprintf("%s must be valid UTF-8 of at most %d characters", f.name, plan.MaxTrustFieldRunes)}
		}
		v := f.v
		*f.dst = &v
	}
	return p, nil
}

// Code-tree budgets for local working_dir snapshots
// (docs/contracts.md#runtime-environments-and-code-identity).
const (
	maxCodeFileBytes   = plan.MaxCodeFileBytes
	maxCodeTreeFiles   = plan.MaxCodeTreeFiles
	maxCodeTreeBytes   = plan.MaxCodeTreeBytes
	maxCodeTreeEntries = plan.MaxCodeTreeEntries
)

var (
	secretKey          = regexp.MustCompile(`(?i)(?:^|[_-])(password|passwd|secret|token|credential|private[_-]?key|api[_-]?key|access[_-]?key)(?:$|[_-])`)
	ociDigest          = regexp.MustCompile(`^[^@\s]+@sha256:([0-9a-f]{64})$`)
	rayPackage         = regexp.MustCompile(`^gcs://_ray_pkg_([0-9a-f]{16,64})\.(zip|tar\.gz)$`)
	supportedEnvFields = map[string]bool{"conda": true, "config": true, "container": true, "env_vars": true, "excludes": true,
		"image_uri": true, "pip": true, "py_executable": true, "py_modules": true, "uv": true,
		"worker_process_setup_hook": true, "working_dir": true}
)

// runtimeEnvIdentity projects a runtime environment spec onto its
// non-secret identity (docs/contracts.md#runtime-environments-and-code-identity) and hashes it with the trust
// identity. Values never enter the projection; secret-looking names are
// marked runtime-only.
func runtimeEnvIdentity(spec RuntimeEnv, trust plan.TrustIdentity) (plan.RuntimeEnvIdentity, error) {
	proj := map[string]any{}
	var unresolved, retryUnsafe []string
	unsupported := 0
	for _, key := range sortedKeys(spec) {
		v := spec[key]
		path := "runtime_env." + key
		if !supportedEnvFields[key] {
			unsupported++
			unresolved = append(unresolved, "runtime_env.unsupported_field")
			continue
		}
		switch {
		case secretKey.MatchString(key):
			proj[key] = map[string]any{"value": "runtime_only"}
			unresolved = append(unresolved, path)
		case key == "env_vars":
			p, ok := envVarsProjection(v, trust)
			proj[key] = p
			if !ok {
				unresolved = append(unresolved, path)
			}
		case key == "image_uri":
			s, _ := v.(string)
			if m := ociDigest.FindStringSubmatch(s); m != nil {
				proj[key] = map[string]any{"kind": "oci_digest", "sha256": m[1]}
			} else {
				proj[key] = map[string]any{"uri": "runtime_only"}
				unresolved = append(unresolved, path)
				retryUnsafe = append(retryUnsafe, path)
			}
		case key == "working_dir":
			p, reusable, retrySafe, err := codeProjection(v)
			if err != nil {
				return plan.RuntimeEnvIdentity{}, err
			}
			proj[key] = p
			if !reusable {
				unresolved = append(unresolved, path)
			}
			if !retrySafe {
				retryUnsafe = append(retryUnsafe, path)
			}
		default:
			// Package lists, hooks and configs name code or versions that
			// can change behind the same text: kept runtime-only.
			proj[key] = map[string]any{"value": "runtime_only"}
			unresolved = append(unresolved, path)
		}
	}
	if unsupported > 0 {
		proj["unsupported_field_count"] = unsupported
	}
	trustDigest, _, err := canonical.Fingerprint(canonical.DomainTrust, trust)
	if err != nil {
		return plan.RuntimeEnvIdentity{}, err
	}
	digest, _, err := canonical.Fingerprint(canonical.DomainRuntimeEnvPlan, map[string]any{
		"plan_format": plan.RuntimeEnvFormat, "plan_format_version": 1, "spec": proj, "trust_identity": trust,
	})
	if err != nil {
		return plan.RuntimeEnvIdentity{}, &DefinitionError{Path: "environments", Code: CodeUnknownRuntimeEnv, Msg: err.Error()}
	}
	id := plan.RuntimeEnvIdentity{PlanFormat: plan.RuntimeEnvFormat, PlanFormatVersion: 1, Digest: digest.String(), TrustDigest: trustDigest.String()}
	id.UnresolvedPaths, id.TotalUnresolvedPaths, id.UnresolvedPathsTruncated = boundedPaths(unresolved)
	id.RetryUnsafePaths, id.TotalRetryUnsafePaths, id.RetryUnsafePathsTruncated = boundedPaths(retryUnsafe)
	id.Reusable = id.TotalUnresolvedPaths == 0
	id.RetrySafe = id.TotalRetryUnsafePaths == 0
	return id, nil
}

// boundedPaths sorts and de-duplicates diagnostic paths and keeps the
// first MaxDiagnosticPaths.
func boundedPaths(paths []string) ([]string, int64, bool) {
	sort.Strings(paths)
	uniq := paths[:0:0]
	for i, p := range paths {
		if i == 0 || p != paths[i-1] {
			uniq = append(uniq, p)
		}
	}
	total := int64(len(uniq))
	if len(uniq) > plan.MaxDiagnosticPaths {
		uniq = uniq[:plan.MaxDiagnosticPaths]
	}
	return uniq, total, total > int64(len(uniq))
}

func envVarsProjection(v any, trust plan.TrustIdentity) (map[string]any, bool) {
	vars, _ := v.(map[string]string)
	if vars == nil {
		if m, ok := v.(map[string]any); ok {
			vars = map[string]string{}
			for k := range m {
				vars[k] = ""
			}
		}
	}
	credential, ordinary := []string{}, []string{}
	for _, k := range sortedKeys(vars) {
		if secretKey.MatchString(k) {
			credential = append(credential, k)
		} else {
			ordinary = append(ordinary, k)
		}
	}
	ordinaryValues := "runtime_only"
	if trust.EnvironmentRevision != nil {
		ordinaryValues = "covered_by_environment_revision"
	}
	resolved := len(credential) == 0 && (len(ordinary) == 0 || trust.EnvironmentRevision != nil)
	return map[string]any{
		"credential_names": credential, "ordinary_names": ordinary,
		"credential_values": "runtime_only", "ordinary_values": ordinaryValues,
	}, resolved
}

// codeProjection identifies a working_dir: a local tree by its content,
// a Ray package by its digest, anything else as runtime-only. A local
// snapshot is retry-safe but never reusable (Ray's package cache key is not
// verifiable by workers).
func codeProjection(v any) (proj map[string]any, reusable, retrySafe bool, err error) {
	s, _ := v.(string)
	if m := rayPackage.FindStringSubmatch(s); m != nil {
		return map[string]any{"kind": "ray_gcs_package", "package_digest": m[1], "package_extension": m[2], "identity_strength": "runtime_only"}, false, true, nil
	}
	if s == "" || strings.Contains(s, "://") {
		return map[string]any{"uri": "runtime_only"}, false, false, nil
	}
	info, statErr := os.Stat(s)
	if statErr != nil {
		return nil, false, false, &DefinitionError{Path: "environments", Code: CodeUnknownRuntimeEnv, Msg: fmt.Sprintf("working_dir: %v", statErr)}
	}
	if !info.IsDir() {
		sum, size, ok := fileDigest(s, info.Size())
		if !ok {
			return overBudget(), false, false, nil
		}
		return map[string]any{"kind": "local_file_snapshot", "sha256": sum, "byte_count": size, "execution_addressing": "ray_artifact_not_strongly_verified"}, false, true, nil
	}
	sum, files, bytes, ok := treeDigest(s)
	if !ok {
		return overBudget(), false, false, nil
	}
	return map[string]any{"kind": "local_tree_snapshot", "sha256": sum, "file_count": files, "byte_count": bytes, "execution_addressing": "ray_artifact_not_strongly_verified"}, false, true, nil
}

func overBudget() map[string]any {
	return map[string]any{"kind": "local_code", "identity": "runtime_only", "reason": "identity_budget_exceeded"}
}

func fileDigest(path string, size int64) (string, int64, bool) {
	if size > maxCodeFileBytes {
		return "", 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxCodeFileBytes+1))
	if err != nil || n > maxCodeFileBytes {
		return "", 0, false
	}
	return hex.EncodeToString(h.Sum(nil)), n, true
}

// treeDigest hashes a directory: sorted relative paths, each with its
// file digest, within the code-tree budgets.
func treeDigest(root string) (string, int64, int64, bool) {
	h := sha256.New()
	var files, bytes, entries int64
	ok := true
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries++
		if entries > maxCodeTreeEntries {
			ok = false
			return fs.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum, n, fine := fileDigest(p, info.Size())
		files++
		bytes += n
		if !fine || files > maxCodeTreeFiles || bytes > maxCodeTreeBytes {
			ok = false
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%s\n", filepath.ToSlash(rel), sum)
		return nil
	})
	if err != nil || !ok {
		return "", 0, 0, false
	}
	return hex.EncodeToString(h.Sum(nil)), files, bytes, true
}
