package sdk

import (
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// ErrInvalidDefinition matches every *DefinitionError.
var ErrInvalidDefinition = errors.New("rayflow: invalid workflow definition")

// ErrUnknownFlow is wrapped by MaterializeRegistered for a name no flow is
// registered under (RegisterFlow).
var ErrUnknownFlow = errors.New("rayflow: no flow registered under this name")

// ErrRayRequired is returned by Run with RequireRay when no Ray engine is
// configured.
var ErrRayRequired = errors.New("rayflow: a Ray engine is required (sdk.RequireRay) but none is configured")

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
