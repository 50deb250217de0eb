package sdk

import (
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// The sentinel errors of sdk, for errors.Is.
var (
	// ErrInvalidDefinition matches every *DefinitionError.
	ErrInvalidDefinition = errors.New("rayflow: invalid workflow definition")
	// ErrUnknownFlow is wrapped for a flow name no flow is registered
	// under (RegisterFlow): a durable task or a Ray job naming it.
	ErrUnknownFlow = errors.New("rayflow: no flow registered under this name")
	// ErrRayRequired is returned by Run with RequireRay when no Ray engine
	// is configured.
	ErrRayRequired = errors.New("rayflow: a Ray engine is required (sdk.RequireRay) but none is configured")
	// ErrStrategyMismatch matches every *StrategyMismatchError.
	ErrStrategyMismatch = errors.New("rayflow: the plan's strategy does not match the engine")
	// ErrStrategyRejected matches a *SelectionError.
	ErrStrategyRejected = errors.New("rayflow: the requested strategy is not eligible for this plan")
	// ErrInvalidRunIdentity is wrapped by the error of a run given an
	// invalid RunIdentity (WithRunIdentity).
	ErrInvalidRunIdentity = sdkrt.ErrInvalidRunIdentity
	// ErrRetryPinMismatch is a durable task's retry whose plan is not the
	// one its first attempt pinned (the durable worker checks the pin).
	ErrRetryPinMismatch = errors.New("rayflow: the retried run does not reproduce its pinned plan")
)

// DefinitionCode names what is wrong with a definition.
type DefinitionCode string

// Definition error codes.
const (
	CodeInvalidLimits       DefinitionCode = "INVALID_LIMITS"
	CodeInvalidActorOptions DefinitionCode = "INVALID_ACTOR_OPTIONS"
	CodeInvalidRayOptions   DefinitionCode = "INVALID_RAY_OPTIONS"
	CodeForbiddenNesting    DefinitionCode = "FORBIDDEN_NESTING"
	CodeNotAMap             DefinitionCode = "NOT_A_MAP"
	CodeNotAStep            DefinitionCode = "NOT_A_STEP"
	CodeFoldAndBuffer       DefinitionCode = "FOLD_AND_BUFFER"
	CodeUnknownRuntimeEnv   DefinitionCode = "UNREGISTERED_RUNTIME_ENV"
	CodeEmpty               DefinitionCode = "EMPTY"
	CodeInvalidLabel        DefinitionCode = "INVALID_LABEL"
	CodeInvalidIdentity     DefinitionCode = "INVALID_CODE_IDENTITY"
	// CodeInvalidBatching: WithItemBatching on a map whose body is not a
	// single step.
	CodeInvalidBatching DefinitionCode = "INVALID_BATCHING"
	// CodeInvalidResume is a resumable map's result cap outside 1 …
	// MaxResumeResultBytes (ResumeResultCap).
	CodeInvalidResume DefinitionCode = "INVALID_RESUME"
	// CodeInvalidVersion is a declared code version (CodeVersion) that is not
	// 1 … MaxCodeVersionBytes printable ASCII characters without spaces.
	CodeInvalidVersion DefinitionCode = "INVALID_CODE_VERSION"
	// CodeUnknownStrategy is a WithStrategy value that is no Strategy.
	CodeUnknownStrategy DefinitionCode = "UNKNOWN_STRATEGY"
	// CodeUnknownReportingPolicy is a WithReportingPolicy value that is no
	// executable ReportingPolicy.
	CodeUnknownReportingPolicy DefinitionCode = "UNKNOWN_REPORTING_POLICY"
	// CodeUnencodableValue is a step, bound or accumulator type the value
	// codec cannot carry across a process boundary.
	CodeUnencodableValue DefinitionCode = "UNENCODABLE_VALUE"
)

// DefinitionError is an invalid workflow definition, found before any
// leaf runs. Path is the plan node id ("0", "0.1", "0.2.g0", "0.3.m*").
type DefinitionError struct {
	Path string
	Code DefinitionCode
	Msg  string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("rayflow: node %s: %s: %s", e.Path, e.Code, e.Msg)
}

// Is makes errors.Is(err, ErrInvalidDefinition) true.
func (e *DefinitionError) Is(target error) bool { return target == ErrInvalidDefinition }

// StepError wraps an error returned by application code with the node it
// came from; errors.Is and errors.As see the original error.
type StepError = flowgraph.StepError

// MaxItemsError reports a map input over its MaxItems limit.
type MaxItemsError = flowgraph.MaxItemsError
