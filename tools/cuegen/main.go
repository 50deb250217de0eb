package main

import (
	"embed"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rayflow/rayflow/tools/cuegen/internal/gen"
)

//go:embed rtsrc/*.go
var rtsrc embed.FS

// Runtime returns the run-time package sources (without tests).
func runtime() ([]gen.RuntimeFile, error) {
	ents, err := fs.ReadDir(rtsrc, "rtsrc")
	if err != nil {
		return nil, err
	}
	var out []gen.RuntimeFile
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := rtsrc.ReadFile("rtsrc/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, gen.RuntimeFile{Name: e.Name(), Src: b})
	}
	return out, nil
}

func main() {
	schemaDir := flag.String("schema", "schema", "directory of the CUE schema package")
	genDir := flag.String("gen", "gen", "output directory for Go packages")
	imp := flag.String("import", "github.com/rayflow/rayflow/gen", "import path of the output directory")
	flag.Parse()
	rt, err := runtime()
	if err == nil {
		var files map[string][]byte
		files, err = gen.Generate(*schemaDir, *genDir, gen.Options{GenImport: *imp}, rt)
		if err == nil {
			err = gen.Write(files, *genDir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cuegen:", err)
		os.Exit(1)
	}
}
