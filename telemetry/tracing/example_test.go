package tracing_test

import (
	"context"
	"log"
	"time"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

func Greet(_ context.Context, name string) (string, error) { return "hello " + name, nil }

var greeting = sdk.Step(Greet)

// A program traces its runs when the environment asks for it, for
// example OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 or
// OTEL_TRACES_EXPORTER=console; with none of the variables set, Setup
// installs nothing and spans cost nothing. Every run is then one trace:
// the run, its plan nodes, map items and leaves (on Ray workers too).
func ExampleSetup() {
	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx)
	if err != nil {
		log.Fatal(err) // an unsupported exporter or protocol, for example
	}
	defer func() {
		// Flush the spans still batched before the process exits.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Print(err)
		}
	}()
	if _, err := sdk.Run(ctx, greeting, "ray"); err != nil {
		log.Print(err)
	}
}
