package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Schedules (migration 0011): rayflow_schedules, and the schedule_name
// and schedule_tick of the tasks they enqueue.

// ScheduleChannel carries "changed" when a schedule was added or removed,
// so that the worker holding the scheduler lease recomputes its wake-up.
const ScheduleChannel = "rayflow_schedules"

// SchedulerLockKey is the session advisory lock whose holder fires the
// schedules' ticks ("rayflows" in ASCII: outside the worker session keys,
// which are at most 2^62).
const SchedulerLockKey int64 = 0x7261_7966_6c6f_7773

// ListenSchedules subscribes conn's session to ScheduleChannel.
func ListenSchedules(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, "LISTEN "+ScheduleChannel)
	return err
}

// NotifySchedules tells the lease holder that the schedules changed
// (delivered at commit).
func NotifySchedules(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, notifySQL, ScheduleChannel, "changed")
	return err
}

// TryLockScheduler takes the scheduler lease (the session advisory lock
// on SchedulerLockKey) on conn if it is free, and reports whether it did.
// It never waits: a statement that waits for a lock keeps its snapshot,
// and a snapshot held for as long as a worker waits for the lease would
// keep every dead row of the database from being cleaned up.
func TryLockScheduler(ctx context.Context, q Querier) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, SchedulerLockKey).Scan(&ok)
	return ok, err
}

// NewSchedule is a schedule to add.
type NewSchedule struct {
	Name, Flow, InputJSON, Queue, Spec, TimeZone, Missed string
	NextFireAt                                           time.Time
}

// InsertSchedule adds s (pgx.ErrNoRows when a schedule of its name
// exists).
func InsertSchedule(ctx context.Context, q Querier, s NewSchedule) error {
	var name string
	return q.QueryRow(ctx, `INSERT INTO rayflow_schedules (name, flow_name, input_json, queue_name, cron_spec, time_zone,
    missed_policy, next_fire_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (name) DO NOTHING RETURNING name`, s.Name, s.Flow, s.InputJSON, s.Queue, s.Spec, s.TimeZone, s.Missed,
		s.NextFireAt).Scan(&name)
}

// DeleteSchedule removes the schedule name (0 rows when there is none).
func DeleteSchedule(ctx context.Context, q Querier, name string) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `DELETE FROM rayflow_schedules WHERE name = $1`, name)
}

// DBNow is the database server's clock.
func DBNow(ctx context.Context, q RowReader) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

// scheduleColumns are a schedule record's columns, in this order: name,
// flow_name, input_json, queue_name, cron_spec, time_zone,
// missed_policy, next_fire_at, last_fired_at, last task id (” for
// none), fired_ticks, created_at.
const scheduleColumns = `name, flow_name, input_json, queue_name, cron_spec, time_zone, missed_policy, next_fire_at,
 last_fired_at, coalesce(last_task_id::text, ''), fired_ticks, created_at`

// ListSchedules lists the schedule records (scheduleColumns) by name.
func ListSchedules(ctx context.Context, q Reader) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT `+scheduleColumns+` FROM rayflow_schedules ORDER BY name`)
}

// DueSchedules locks up to limit schedules whose next_fire_at has come
// (SKIP LOCKED), the earliest first. Rows: scheduleColumns, then the
// transaction's now().
func DueSchedules(ctx context.Context, q Reader, limit int) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT `+scheduleColumns+`, now() FROM rayflow_schedules WHERE next_fire_at <= now()
ORDER BY next_fire_at, name LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
}

// NextWake is the earliest next_fire_at of any schedule (nil for none)
// and the server's clock.
func NextWake(ctx context.Context, q RowReader) (*time.Time, time.Time, error) {
	var next *time.Time
	var now time.Time
	err := q.QueryRow(ctx, `SELECT (SELECT min(next_fire_at) FROM rayflow_schedules), now()`).Scan(&next, &now)
	return next, now, err
}

// AdvanceSchedule moves schedule name from next_fire_at old to next,
// recording fired ticks and the last task; 0 rows when its next_fire_at
// is no longer old (someone else fired the tick).
func AdvanceSchedule(ctx context.Context, q Querier, name string, old, next time.Time, fired int, lastTask *string) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `UPDATE rayflow_schedules SET next_fire_at = $3,
 last_fired_at = CASE WHEN $4 > 0 THEN now() ELSE last_fired_at END,
 last_task_id = coalesce($5::uuid, last_task_id), fired_ticks = fired_ticks + $4
WHERE name = $1 AND next_fire_at = $2`, name, old, next, fired, lastTask)
}

// InsertScheduledTask inserts the task of one tick of a schedule, runnable
// at once, and returns its primary key: pgx.ErrNoRows when the task id or
// the tick's task exists already (ScheduledTaskExists tells which).
func InsertScheduledTask(ctx context.Context, q Querier, t NewTask, schedule string, tick time.Time) (int64, error) {
	var pk int64
	t.RunAfter = nil
	err := q.QueryRow(ctx, insertScheduledTask, t.args(schedule, tick)...).Scan(&pk)
	return pk, err
}

var insertScheduledTask = insertTask(", schedule_name, schedule_tick", ", $12, $13", `ON CONFLICT DO NOTHING
RETURNING id`)

// ScheduledTaskExists reports whether the task of schedule's tick exists.
func ScheduledTaskExists(ctx context.Context, q RowReader, schedule string, tick time.Time) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rayflow_tasks WHERE schedule_name = $1 AND schedule_tick = $2)`,
		schedule, tick).Scan(&ok)
	return ok, err
}
