package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Setup failures need no cluster: the record is still the last line.
func TestServeSetupFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"unknown flow", Config{Flow: "nope", Input: json.RawMessage(`1`)}, `no flow named "nope"`},
		{"bad input", Config{Flow: "nope", Input: json.RawMessage(`{`)}, "the input is not JSON"},
	} {
		var out bytes.Buffer
		code := Serve(context.Background(), tc.c, &out, io.Discard)
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		last := lines[len(lines)-1]
		var r Result
		if !strings.HasPrefix(last, ResultPrefix) || json.Unmarshal([]byte(last[len(ResultPrefix):]), &r) != nil {
			t.Fatalf("%s: last line %q is not a result record", tc.name, last)
		}
		if code != ExitSetup || r.OK || r.Version != ResultVersion || r.Error == nil || r.Error.Kind != "setup" || !strings.Contains(r.Error.Message, tc.want) {
			t.Errorf("%s: exit %d, record %+v %+v", tc.name, code, r, r.Error)
		}
	}
}

func TestInputEncoding(t *testing.T) {
	t.Setenv(InputEnv, EncodeInput([]byte(`{"a":"?/+"}`)))
	t.Setenv(FlowEnv, "nope")
	var out bytes.Buffer
	Serve(context.Background(), Config{}, &out, io.Discard)
	if !strings.Contains(out.String(), `"flow":"nope"`) || !strings.Contains(out.String(), `no flow named`) {
		t.Errorf("record %s", out.String())
	}
}
