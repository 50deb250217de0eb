package sdk_test

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/apitest"
	"github.com/rayflow/rayflow/sdk"
)

// TestAPISurface: sdk exports what an application author uses and nothing
// only this module's own packages call (the engine side is in
// internal/sdkrt, running plans held by value or name in internal/sdkhost,
// build identity's environment names in internal/buildid, the preview
// envelope in progress). A new export is a decision: add it here.
func TestAPISurface(t *testing.T) {
	got, err := apitest.Exported(".")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"const CancelTimeoutDefault", "const CodeEmpty", "const CodeFoldAndBuffer",
		"const CodeForbiddenNesting", "const CodeInvalidActorOptions", "const CodeInvalidBatching",
		"const CodeInvalidIdentity", "const CodeInvalidLabel", "const CodeInvalidLimits",
		"const CodeInvalidRayOptions", "const CodeInvalidResume", "const CodeInvalidVersion", "const CodeNotAMap", "const CodeNotAStep",
		"const CodeUnencodableValue", "const CodeUnknownReportingPolicy", "const CodeUnknownRuntimeEnv",
		"const CodeUnknownStrategy", "const MaxActorCustomResources", "const MaxCodeVersionBytes", "const MaxItemsPerTask",
		"const MaxLabelBytes", "const MaxResumeResultBytes", "const ReportingPolicyDisabled", "const ReportingPolicyFull",
		"const ReportingPolicyTerminalOnly", "const ResumeResultBytesDefault", "const StrategyAuto", "const StrategyCompiledGraph",
		"const StrategyDynamicTasks", "const StrategyLocal", "const StrategyStaticActors",
		"const Version",
		"func Bind", "func Chain3", "func Chain4", "func Chain5", "func Chain6", "func ChainOf", "func CodeVersion",
		"func ForRay", "func Group", "func Group2", "func Group3", "func Map", "func MapSeq",
		"func Materialize", "func NewRunIdentity", "func OnRunStart", "func Reduce",
		"func RegisterBootstrap", "func RegisterErrorType", "func RegisterFlow", "func RegisterReducer",
		"func RegisterRuntimeEnv", "func RegisterSentinel", "func ReportProgress", "func RequireRay",
		"func ResumeResultCap", "func Run", "func Sequential", "func Step", "func Then", "func WithBootstrap", "func WithEngine",
		"func WithPlan", "func WithPlanOptions", "func WithProgress", "func WithProgressInterval",
		"func WithProgressLimits", "func WithRayOptions", "func WithReportingPolicy",
		"func WithResources", "func WithRunIdentity", "func WithRuntimeEnv", "func WithStrategy",
		"func WithTrust", "func WithoutCodecRoundTrip",
		"type ActorOptions", "type CanceledError", "type Codec", "type DefinitionCode",
		"type DefinitionError", "type Engine", "type Flow", "type FoldOptions", "type Limits",
		"type MaterializeOption", "type Materialized", "type MaxItemsError", "type PanicError",
		"type RayOptions", "type ReportingPolicy", "type Resources", "type ResultBuffer",
		"type ResumeOption", "type RunIdentity", "type RunOption", "type RuntimeEnv", "type SelectionError", "type StepError",
		"type StepOption", "type Strategy", "type StrategyMismatchError", "type TrustIdentity",
		"type Tuple2", "type Tuple3", "type ValueError",
		"var DefaultCodec", "var ErrInvalidDefinition", "var ErrInvalidRunIdentity", "var ErrRayRequired",
		"var ErrRetryPinMismatch", "var ErrStrategyMismatch", "var ErrStrategyRejected",
		"var ErrUnknownFlow",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("sdk's exported identifiers (-want +got):\n%s", d)
	}
}

// TestMaterializedMethods: a plan's methods are what an application reads
// of it; the durable worker's retry pin check is internal/sdkhost's.
func TestMaterializedMethods(t *testing.T) {
	typ := reflect.TypeFor[*sdk.Materialized]()
	var got []string
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	want := []string{"CacheKey", "ReportingPolicy", "Summary"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("*sdk.Materialized's methods (-want +got):\n%s", d)
	}
}
