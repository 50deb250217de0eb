package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/syncbuf"
)

// helpExample is one command line of a command's --help examples and the
// output lines the help shows under it.
type helpExample struct {
	command string // the rayflow command whose help shows it
	line    string
	output  []string
}

// helpExamples extracts the examples of every command's --help: the lines
// after "Examples:" indented by two spaces are command lines, the more
// deeply indented ones below a command line its output.
func helpExamples(t *testing.T) []helpExample {
	t.Helper()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []helpExample
	for _, name := range names {
		code, help, errOut := runCLI(t, "", name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d: %s", name, code, errOut)
		}
		_, examples, ok := strings.Cut(help, "\nExamples:\n")
		if !ok {
			t.Fatalf("%s --help has no Examples section", name)
		}
		for _, l := range strings.Split(examples, "\n") {
			switch {
			case strings.HasPrefix(l, "   ") && len(out) > 0 && out[len(out)-1].command == name:
				out[len(out)-1].output = append(out[len(out)-1].output, strings.TrimSpace(l))
			case strings.HasPrefix(l, "  ") && strings.TrimSpace(l) != "":
				out = append(out, helpExample{command: name, line: strings.TrimSpace(l)})
			}
		}
	}
	return out
}

// Examples this test does not run as written, and why. An entry that no
// longer matches an example fails the test, so the table stays honest.
var (
	// notRun: what they need is not something a test can provide here.
	notRun = map[string]string{
		`go build -o "$PWD/bin/fanout" ./examples/fanout`: "builds the binary for the Ray Jobs example below",
		`rayflow rayjob submit --exe "$PWD/bin/fanout" --python "$PWD/.venv-ray/bin/python" --input 200 --id fanout-1 --wait fanout`: "needs a Ray cluster's Jobs API (rayjob's tests submit to a real head)",
		`rayflow rayjob submit --exe /opt/app/fanout --input 200 --id fanout-2 fanout   # prints fanout-2`:                           "needs a Ray cluster whose nodes have /opt/app/fanout",
		`rayflow rayjob wait fanout-2 && rayflow rayjob result fanout-2`:                                                             "needs the job of the example above",
		`rayflow rayjob logs fanout-2`: "needs the job of the example above",
		`rayflow rayjob stop fanout-2`: "needs the job of the example above",
		`curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/workflows/$id/topology/nodes?limit=50`:                           "needs the reader's token and a run id (serve's tests read every route)",
		`rayflow conformance run --impl 'python3 conformance/reference/python/rayflow_canon.py'`:                                           "takes minutes; conformance's TestPythonReference runs the same suite against the Python reference",
		`rayflow worker --queue reports --concurrency 4 --runner ray --ray-address 127.0.0.1:6390` + "\x00without the head of make ray-up": "needs the Ray head make ray-up starts (127.0.0.1:6390) and RAYFLOW_PYTHON",
	}
	// rewritten: run in this form instead, for the reason given.
	rewritten = map[string]struct{ run, why string }{
		`rayflow rayjob manifest --name fanout --image ghcr.io/me/fanout:1 --exe /opt/app/fanout --input 200 fanout | kubectl apply -f -`: {
			`rayflow rayjob manifest --name fanout --image ghcr.io/me/fanout:1 --exe /opt/app/fanout --input 200 fanout`,
			"kubectl apply needs a Kubernetes cluster with KubeRay; the manifest itself is checked",
		},
		`rayflow migrate up --database-url postgres://postgres@127.0.0.1:5432/rayflow`: {
			`rayflow migrate up --database-url "$RAYFLOW_DATABASE_URL"`,
			"the URL is a placeholder for the reader's server; the test's database instead",
		},
	}
	// daemons run until SIGTERM: started, ready when their log says so
	// (the message, in the text or the JSON log format), then stopped;
	// they must exit 0.
	daemons = map[string]string{"worker": `durable worker started"`, "serve": `serving`}
)

var exitComment = regexp.MustCompile(`#\s*exit (\d+)`)

// TestHelpExamplesRun runs every example command line of every command's
// --help with the built rayflow on PATH, as a reader would paste it, in a
// directory holding the files the examples name, against a real
// PostgreSQL (a worker runs during the tasks examples). A line must exit
// 0, or the status its "# exit N" comment states, and print the output
// lines the help shows under it ("…" elides). A wrong example fails here.
// The subtests share one database and run in order, migrate first: run
// the whole test, not one subtest alone.
func TestHelpExamplesRun(t *testing.T) {
	db := pgtest.URL(t)
	bin := builtCLI(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "RAYFLOW_DATABASE_URL="+db)
	fixtures(t, bin, repo, dir, db)

	examples := helpExamples(t)
	used := map[string]bool{}
	rayHead := os.Getenv("RAYFLOW_RAY_ADDRESS") == "127.0.0.1:6390" && os.Getenv("RAYFLOW_PYTHON") != ""
	// migrate first: the other commands need its tables.
	slices.SortStableFunc(examples, func(a, b helpExample) int {
		return boolInt(b.command == "migrate") - boolInt(a.command == "migrate")
	})
	var blocks [][]helpExample
	for _, ex := range examples {
		if len(blocks) == 0 || blocks[len(blocks)-1][0].command != ex.command {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], ex)
	}
	for _, block := range blocks {
		name := block[0].command
		var script []helpExample
		var background []helpExample
		for _, ex := range block {
			if why, ok := notRun[ex.line]; ok {
				used[ex.line] = true
				t.Logf("not run: %s (%s)", ex.line, why)
				continue
			}
			if key := ex.line + "\x00without the head of make ray-up"; notRun[key] != "" {
				used[key] = true
				if !rayHead {
					t.Logf("not run: %s (%s)", ex.line, notRun[key])
					continue
				}
			}
			if r, ok := rewritten[ex.line]; ok {
				used[ex.line] = true
				t.Logf("run as %s (%s)", r.run, r.why)
				ex.line = r.run
			}
			if _, ok := daemons[daemonOf(ex.line)]; ok {
				background = append(background, ex)
				continue
			}
			script = append(script, ex)
		}
		t.Run(name, func(t *testing.T) {
			if name == "tasks" {
				startWorker(t, bin, dir, env)
			}
			runScript(t, dir, env, script)
			for _, ex := range background {
				runDaemon(t, dir, env, ex)
			}
		})
	}
	for k := range notRun {
		if !used[k] {
			t.Errorf("notRun names an example no help shows: %q", k)
		}
	}
	for k := range rewritten {
		if !used[k] {
			t.Errorf("rewritten names an example no help shows: %q", k)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fixtures writes the files the examples name into dir.
func fixtures(t *testing.T, bin, repo, dir, db string) {
	t.Helper()
	plan, err := exec.Command(bin, "plan", "show", "fanout").Output()
	if err != nil {
		t.Fatalf("plan show: %v", err)
	}
	var planFields map[string]json.RawMessage
	if err := json.Unmarshal(plan, &planFields); err != nil || planFields["definition"] == nil {
		t.Fatalf("plan show: no definition (%v)", err)
	}
	copyFile := func(from string) []byte {
		b, err := os.ReadFile(filepath.Join(repo, from))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, content := range map[string][]byte{
		"plan.json":           plan,
		"definition.json":     planFields["definition"],
		"page.json":           copyFile("schema/testdata/valid/TopologyNode/base.json"),
		"scenario.jsonl":      copyFile("conformance/lifecycle/scenarios/cmd_happy_single_output.jsonl"),
		"task-1.summary.json": copyFile("schema/testdata/valid/Summary/base.json"),
		".pg-local/url":       []byte(db + "\n"),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"conformance": filepath.Join(repo, "conformance"),
		".venv-ray":   filepath.Join(repo, ".venv-ray"),
		"bin/rayflow": bin,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// daemonOf returns the rayflow command a line runs ("" if it runs none
// directly).
func daemonOf(line string) string {
	f := strings.Fields(line)
	if len(f) >= 2 && f[0] == "rayflow" {
		return f[1]
	}
	return ""
}

// runScript runs the lines in one shell, in order (a line may use a
// variable an earlier one set), each with its own output and status.
func runScript(t *testing.T, dir string, env []string, lines []helpExample) {
	t.Helper()
	if len(lines) == 0 {
		return
	}
	outDir := t.TempDir()
	var sh strings.Builder
	for i, ex := range lines {
		fmt.Fprintf(&sh, "{ %s\n} >%q 2>%q </dev/null; echo $? >%q\n", ex.line,
			filepath.Join(outDir, fmt.Sprint(i, ".out")), filepath.Join(outDir, fmt.Sprint(i, ".err")), filepath.Join(outDir, fmt.Sprint(i, ".rc")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", sh.String())
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the examples' shell: %v\n%s", err, out)
	}
	for i, ex := range lines {
		read := func(ext string) string {
			b, err := os.ReadFile(filepath.Join(outDir, fmt.Sprint(i, ext)))
			if err != nil {
				t.Fatalf("%s: %v", ex.line, err)
			}
			return string(b)
		}
		rc, err := strconv.Atoi(strings.TrimSpace(read(".rc")))
		if err != nil {
			t.Fatalf("%s: status %v", ex.line, err)
		}
		stdout, stderr := read(".out"), read(".err")
		want := 0
		if m := exitComment.FindStringSubmatch(ex.line); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		if rc != want {
			t.Errorf("example %q: exit %d, want %d\nstdout: %.2000s\nstderr: %.2000s", ex.line, rc, want, stdout, stderr)
			continue
		}
		if missing := missingOutput(ex.output, stdout+stderr); missing != "" {
			t.Errorf("example %q: the help shows %q, not in its output:\n%.2000s%.2000s", ex.line, missing, stdout, stderr)
		}
	}
}

// missingOutput returns the first of the shown lines that the output does
// not have (in order; "…" stands for any text, a line of only "…" for any
// lines), or "".
func missingOutput(shown []string, output string) string {
	lines := strings.Split(output, "\n")
	at := 0
	for _, s := range shown {
		if strings.Trim(s, "… ") == "" {
			continue
		}
		found := false
		for ; at < len(lines) && !found; at++ {
			found = elidedMatch(s, lines[at])
		}
		if !found {
			return s
		}
	}
	return ""
}

// elidedMatch reports whether line is shown, where each "…" in shown
// stands for any text.
func elidedMatch(shown, line string) bool {
	parts := strings.Split(shown, "…")
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	rest := line[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(rest, p)
		}
		k := strings.Index(rest, p)
		if k < 0 {
			return false
		}
		rest = rest[k+len(p):]
	}
	return rest == ""
}

// runDaemon starts a line that runs until stopped, waits for its ready
// line in its log, stops it with SIGTERM and wants exit 0.
func runDaemon(t *testing.T, dir string, env []string, ex helpExample) {
	t.Helper()
	ready := daemons[daemonOf(ex.line)]
	cmd := exec.Command("sh", "-c", "exec "+ex.line)
	cmd.Dir, cmd.Env = dir, env
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(logs.String(), ready) {
		select {
		case err := <-done:
			if strings.Contains(logs.String(), "address already in use") {
				t.Logf("example %q: its port is taken on this machine, not checked: %s", ex.line, logs.String())
				return
			}
			t.Errorf("example %q ended before it was ready (%v):\n%s", ex.line, err, logs.String())
			return
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("example %q: no %q in its log after 2 minutes:\n%s", ex.line, ready, logs.String())
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("example %q: after SIGTERM: %v\n%s", ex.line, err, logs.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("example %q did not stop within a minute of SIGTERM:\n%s", ex.line, logs.String())
	}
}

// startWorker runs a rayflow worker on the test's database until the test
// ends (the tasks examples wait for results).
func startWorker(t *testing.T, bin, dir string, env []string) {
	t.Helper()
	cmd := exec.Command(bin, "worker", "--poll-max-interval", "200ms")
	cmd.Dir, cmd.Env = dir, env
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the worker: %v\n%s", err, logs.String())
		}
	})
}

// TestShownOutputMatching: the shown output lines of an example are found
// in order, with "…" for any text, and a line the output lacks is named.
func TestShownOutputMatching(t *testing.T) {
	t.Parallel()
	output := "{\"action\":{\"kind\":\"VALIDATE\"}}\n{\"action\":null}\n{\"action\":null}\n{\"capacity\":{\"a\":1},\"x\":[],\"y\":2,\"state\":\"READY\"}\n"
	for _, tc := range []struct {
		name    string
		shown   []string
		missing string
	}{
		{"nothing shown", nil, ""},
		{"exact lines in order", []string{`{"action":{"kind":"VALIDATE"}}`, `{"action":null}`}, ""},
		{"elided lines and text", []string{`{"action":null}`, "…", `{"capacity":{…},"x":[],…,"state":"READY"}`}, ""},
		{"a line not printed", []string{`{"action":"other"}`}, `{"action":"other"}`},
		{"out of order", []string{`{"capacity":{…}…`, `{"action":null}`}, `{"action":null}`},
		{"a prefix is not the line", []string{`{"action":`}, `{"action":`},
		{"elided text must match around it", []string{`{"capacity":{…},"y":…`}, `{"capacity":{…},"y":…`},
	} {
		if got := missingOutput(tc.shown, output); got != tc.missing {
			t.Errorf("%s: missing %q, want %q", tc.name, got, tc.missing)
		}
	}
}
