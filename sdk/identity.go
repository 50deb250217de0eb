package sdk

import (
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// buildRevisionVars are read in order; the first set one is the build
// revision ("environment:<VAR>:<value>").
var buildRevisionVars = []string{buildid.EnvBuildRevision, "GIT_COMMIT", "SOURCE_VERSION", "K_REVISION"}

// maxBuildRevisionRunes bounds an environment-provided build revision.
const maxBuildRevisionRunes = 256

var imageDigest = regexp.MustCompile(`^sha256:[0-9a-fA-F]{64}$`)

// codeContext is what the materializer knows about the running binary.
type codeContext struct {
	getenv    func(string) string
	buildInfo *debug.BuildInfo
	// executable returns the digest of the binary that runs the leaves
	// ("sha256:<hex>"), or "" when unknown.
	executable func() (string, error)
}

func defaultCodeContext() codeContext {
	bi, _ := debug.ReadBuildInfo()
	return codeContext{getenv: os.Getenv, buildInfo: bi, executable: buildid.Self}
}

// Code identity and retry pinning. A plan's definition.build_revision is,
// in this order:
//
//   - "environment:<VAR>:<value>" from RAYFLOW_BUILD_REVISION, GIT_COMMIT,
//     SOURCE_VERSION or K_REVISION: stable across rebuilds and machines
//     (the deployer vouches that the value names the code);
//   - "vcs:<revision>" stamped by the Go toolchain when the binary was
//     built from an unmodified checkout: stable across rebuilds of that
//     commit;
//   - otherwise "executable:sha256:<hex>", the digest of the running
//     executable (computed once per process): it follows every change of
//     code (a step body from 2*n to 3*n changes the fingerprint) and is
//     stable only for the same bytes: a retry run by the same binary (or a
//     byte-identical rebuild: same source, toolchain, flags and paths, or
//     -trimpath) reproduces the fingerprint; any other build does not, so
//     a pinned retry fails closed rather than running different code.
//     Every Ray leaf process checks at its start that its own digest equals
//     the plan's and refuses to run otherwise (engine/ray's leaf
//     handshake). Callable identities stay unstable and reusable
//     strategies stay rejected (UNRESOLVED_CODE_IDENTITY): a binary digest
//     is a development identity.

// buildRevision returns the build revision: from the environment first,
// else the VCS revision stamped by the Go toolchain (only for an
// unmodified checkout), else the executable's digest (nil if unknown).
func (c codeContext) buildRevision() (*string, error) {
	rev, err := c.stableRevision()
	if rev != nil || err != nil || c.executable == nil {
		return rev, err
	}
	d, err := c.executable()
	if err != nil || d == "" {
		return nil, nil // unknown: UNRESOLVED_CODE_IDENTITY, as before
	}
	s := buildid.Prefix + d
	return &s, nil
}

// buildIdentity is the build's code identity for a resumable map's item
// code identity (program.CompileFor): the build revision and the image
// digest, or "" when the revision is unknown or invalid (the plan
// reports an invalid one).
func (c codeContext) buildIdentity() string {
	rev, err := c.buildRevision()
	if err != nil || rev == nil {
		return ""
	}
	img, err := c.imageDigest()
	if err != nil || img == nil {
		return *rev
	}
	return *rev + "\x00image:" + *img
}

// executableDigest returns the "sha256:<hex>" digest a plan's build
// revision names when it is the leaves' executable digest, or "".
func executableDigest(rev *string) string {
	if rev == nil || !strings.HasPrefix(*rev, buildid.Prefix) {
		return ""
	}
	return strings.TrimPrefix(*rev, buildid.Prefix)
}

// stableRevision is the environment or VCS revision, nil when neither is
// set.
func (c codeContext) stableRevision() (*string, error) {
	for _, v := range buildRevisionVars {
		val := c.getenv(v)
		if val == "" {
			continue
		}
		if !utf8.ValidString(val) || utf8.RuneCountInString(val) > maxBuildRevisionRunes {
			return nil, fmt.Errorf("rayflow: %s must be valid UTF-8 of at most %d characters", v, maxBuildRevisionRunes)
		}
		s := "environment:" + v + ":" + val
		return &s, nil
	}
	if rev := buildid.VCSRevision(c.buildInfo); rev != "" {
		return &rev, nil
	}
	return nil, nil
}

// imageDigest returns RAYFLOW_IMAGE_DIGEST lower-cased, or nil.
func (c codeContext) imageDigest() (*string, error) {
	v := c.getenv(buildid.EnvImageDigest)
	if v == "" {
		return nil, nil
	}
	if !imageDigest.MatchString(v) {
		return nil, &DefinitionError{Path: "definition.container_image_digest", Code: CodeInvalidIdentity,
			Msg: fmt.Sprintf("%s must be sha256:<64 hex digits>, got %q", buildid.EnvImageDigest, v)}
	}
	s := strings.ToLower(v)
	return &s, nil
}

// splitSymbol splits a Go symbol into package path and qualified name:
// "example.com/app/steps.Resize" → ("example.com/app/steps", "Resize").
func splitSymbol(name string) (pkg, qual string) {
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	if dot < 0 {
		return name, ""
	}
	return name[:slash+1+dot], name[slash+1+dot+1:]
}

// moduleIdentity identifies the Go module that provides package pkg: a
// dependency with a version and go.sum hash is stable; the main module is
// stable only when built from an unmodified VCS checkout.
func (c codeContext) moduleIdentity(pkg string) plan.ModuleIdentity {
	id := plan.ModuleIdentity{Module: pkg, Origin: plan.ModuleOriginUnresolved}
	bi := c.buildInfo
	if bi == nil {
		return id
	}
	if pkg == "main" {
		pkg = bi.Main.Path // a command's own package
	}
	var best *debug.Module
	consider := func(m *debug.Module) {
		if m == nil || m.Path == "" {
			return
		}
		if (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) && (best == nil || len(m.Path) > len(best.Path)) {
			best = m
		}
	}
	consider(&bi.Main)
	for _, d := range bi.Deps {
		consider(d)
	}
	if best == nil {
		return id
	}
	if best.Replace != nil {
		best = best.Replace
	}
	p := plan.ModulePackage{Name: best.Path, Version: best.Version}
	if best.Sum != "" {
		s := best.Sum
		p.Sum = &s
	}
	if p.Version == "" {
		p.Version = "(devel)"
	}
	id.Packages = &[]plan.ModulePackage{p}
	if best.Path == bi.Main.Path && best.Sum == "" {
		rev, _ := c.stableRevision()
		id.Stable = rev != nil
		return id
	}
	id.Stable = best.Sum != ""
	return id
}

// callableEntry builds a callable table entry.
func (c codeContext) callableEntry(ref string, fc flowgraph.Callable) plan.Callable {
	pkg, qual := splitSymbol(fc.Name)
	owner := c.moduleIdentity(pkg)
	ci := plan.CodeIdentity{Module: pkg, ResolvedQualname: qual, ImportOwner: owner, ResolvedTarget: owner}
	kind := plan.CallableKindSync
	if fc.Resolvable {
		state := plan.CodeIdentityCallableStateModuleDefined
		ci.Kind, ci.Deployment, ci.CallableState = plan.CallableKindSync, plan.CodeIdentityDeploymentModuleAndTargetIdentity, &state
		ci.Stable = owner.Stable
	} else {
		kind = plan.CallableKindCallableObject
		state := plan.CodeIdentityCallableStateRuntimeOnly
		ci.Kind, ci.Deployment, ci.CallableState = plan.CallableKindCallableObject, plan.CodeIdentityDeploymentWorkerRuntimeOnly, &state
		ci.Stable = false
	}
	return plan.Callable{ID: ref, ImportPath: fc.Name, Kind: kind, CodeIdentity: ci}
}
