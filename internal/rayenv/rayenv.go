// Package rayenv is the Python environment with Ray that rayflow drives:
// the Ray version it pins and where its interpreter is found. The Ray
// engine's bridge, a Ray job's coordinator, the durable Ray job runner and
// the rayflow command share it.
package rayenv

import (
	"os"
	"path/filepath"
)

// RayVersion is the Ray version rayflow pins: the bridge requires exactly
// it, and make ray-venv installs it.
const RayVersion = "2.60.0"

// PythonEnv names the interpreter to use when set.
const PythonEnv = "RAYFLOW_PYTHON"

// Python finds the interpreter: $RAYFLOW_PYTHON, else the nearest
// .venv-ray/bin/python upwards from the working directory, else "".
func Python() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, ".venv-ray", "bin", "python")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
