package serve

import (
	"bytes"
	"context"
	"testing"

	"github.com/rayflow/rayflow/internal/store"
)

// A repair task's status names its origin, and its task and graph pages
// link to it; another task's show nothing of the kind.
func TestRepairTaskLinksItsOrigin(t *testing.T) {
	e := newEnv(t, 4)
	ctx := context.Background()
	var origin string
	if err := e.pool.QueryRow(ctx, `SELECT gen_random_uuid()::text`).Scan(&origin); err != nil {
		t.Fatal(err)
	}
	originPK, err := store.InsertTask(ctx, e.pool, store.NewTask{TaskID: origin, Flow: "chain", Queue: "default", MaxAttempts: 3, InputJSON: `{}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		repair bool
	}{{"another task", false}, {"a repair task", true}} {
		if c.repair {
			if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET repair_of = $2 WHERE task_id = $1`, e.taskID, originPK); err != nil {
				t.Fatal(err)
			}
		}
		code, body := e.do(t, "chain", "GET", "/api/tasks/"+e.taskID)
		got, has := body["repair_of"]
		if code != 200 || has != c.repair || c.repair && got != origin {
			t.Errorf("%s: GET /api/tasks/{id} = %d, repair_of %v (present %v); want present %v, %s", c.name, code, got, has, c.repair, origin)
		}
		for _, pg := range []struct{ path, link string }{
			{"/tasks/" + e.taskID, `<a href="/tasks/` + origin + `">`},
			{"/tasks/" + e.taskID + "/graph", `<a href="/tasks/` + origin + `/graph"`},
		} {
			code, _, html := e.get(t, "chain", pg.path)
			if code != 200 || bytes.Contains(html, []byte(`id="repair-of"`)) != c.repair || bytes.Contains(html, []byte(pg.link)) != c.repair {
				t.Errorf("%s: GET %s = %d, shows the origin link: %v; want %v", c.name, pg.path, code, bytes.Contains(html, []byte(pg.link)), c.repair)
			}
		}
	}
}
