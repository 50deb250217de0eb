package main

import (
	"context"

	"github.com/rayflow/rayflow/tools/cuegen/validatecmd"
)

func init() {
	register("validate", "validate JSON records against the generated schema validators", cmdValidate)
}

func cmdValidate(ctx context.Context, e env, args []string) int {
	return validatecmd.Run(ctx, args, e.stdout, e.stderr)
}
