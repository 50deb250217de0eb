package lifecycle_test

import (
	"github.com/rayflow/rayflow/engine/lifecycle"
	schema "github.com/rayflow/rayflow/gen/lifecycle"
)

func toSchemaDiag(d lifecycle.Diagnostic) schema.CleanupDiagnostic {
	return schema.CleanupDiagnostic(d)
}
