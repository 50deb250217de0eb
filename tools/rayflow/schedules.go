package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayflow/rayflow/durable"
)

func init() {
	register("schedules", "add, list and remove cron schedules that enqueue durable tasks (PostgreSQL)", cmdSchedules)
}

const schedulesSynopsis = `schedules add|list|remove [flags] [NAME]

  add NAME --flow F --cron SPEC [--tz ZONE] [--input JSON|-] [--queue Q]
      [--missed skip|catch-up] [--allow-unserved]
                                 prints the schedule's name and first tick; a task of F
                                 is enqueued at every tick by the worker holding the
                                 scheduler lease (rayflow worker, unless --no-scheduler)
  list [--json]                  the schedules by name, with their next and last tick
  remove NAME                    removes the schedule (its tasks stay)

SPEC is five fields, minute hour day-of-month month day-of-week (lists 1,2, ranges
1-5, steps */5, names jan and mon), or @every D (e.g. @every 90s), @hourly, @daily,
@weekly, @monthly, @yearly. --tz is an IANA zone (default UTC): a local time a
daylight-saving change skips fires at the end of the gap, a repeated one once.
--missed: the ticks missed while no worker ran fire once (skip, the default) or
each, the newest 100 (catch-up).

The connection comes from --database-url or RAYFLOW_DATABASE_URL.`

// schedulesExamples run in this order as written (TestHelpExamplesRun).
const schedulesExamples = `rayflow schedules add every-5-min --flow fanout --input 20 --cron '*/5 * * * *'
rayflow schedules add nightly --flow fanout --input 200 --cron '30 2 * * *' --tz Europe/Berlin --missed catch-up
rayflow schedules list
rayflow schedules remove every-5-min
rayflow schedules remove nightly
`

func cmdSchedules(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "schedules", schedulesSynopsis, schedulesExamples)
	dbURL := databaseFlag(fs)
	flow := fs.String("flow", "", "add: the flow of the tasks (built in or published by a live worker)")
	spec := fs.String("cron", "", "add: the schedule: five cron fields or @every D, @hourly, @daily, ...")
	tz := fs.String("tz", "UTC", "add: the IANA time zone the cron fields are read in")
	input := fs.String("input", "", "add: the tasks' input JSON, or - to read it from stdin (required unless the flow's input type can be null)")
	queue := fs.String("queue", durable.DefaultQueue, "add: the tasks' queue")
	missed := fs.String("missed", string(durable.MissedSkip), "add: missed ticks fire once (skip) or each, the newest 100 (catch-up)")
	allowUnserved := fs.Bool("allow-unserved", false, "add: a flow this binary does not have even when no live worker serves it on the queue")
	asJSON := fs.Bool("json", false, "list: print the schedules as JSON")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	verb, rest, code := verbArgs(fs, words, map[string]int{"add": 1, "list": 0, "remove": 1})
	if code >= 0 {
		return code
	}
	given := givenFlags(fs)
	var s durable.Schedule
	if verb == "add" {
		s = durable.Schedule{Name: rest[0], Flow: *flow, Cron: *spec, TimeZone: *tz, Queue: *queue,
			Missed: durable.MissedPolicy(*missed), AllowUnserved: *allowUnserved}
		if code := checkScheduleFlags(e, s, given); code >= 0 {
			return code
		}
		raw, code := scheduleInput(e, *flow, *input, given["input"])
		if code >= 0 {
			return code
		}
		s.Input = raw
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	c := durable.NewClient(pool, nil)
	switch verb {
	case "add":
		return schedulesAdd(ctx, e, c, s)
	case "list":
		return schedulesList(ctx, e, c, *asJSON)
	default:
		if err := c.RemoveSchedule(ctx, rest[0]); err != nil {
			errorLine(e, "schedules remove: %v", err)
			return exitError
		}
		return exitOK
	}
}

// checkScheduleFlags refuses, before connecting, a schedule whose
// flags are missing or out of their bounds (exitUsage; -1 to go on).
func checkScheduleFlags(e env, s durable.Schedule, given map[string]bool) int {
	switch {
	case !given["flow"]:
		errorLine(e, "schedules add %s: --flow is required", s.Name)
		return exitUsage
	case !given["cron"]:
		errorLine(e, "schedules add %s: --cron is required", s.Name)
		return exitUsage
	}
	if err := durable.CheckSchedule(s); err != nil {
		var se *durable.ScheduleError
		switch {
		case errors.As(err, &se) && se.Field == "Name":
			errorLine(e, "schedules add: NAME: %v", se.Err)
		case errors.As(err, &se):
			errorLine(e, "--%s: %v", scheduleFlags[se.Field], se.Err)
		default:
			errorLine(e, "%v", err)
		}
		return exitUsage
	}
	return -1
}

// scheduleFlags names the flag of each durable.Schedule field a
// durable.ScheduleError can name (the name is the NAME argument).
var scheduleFlags = map[string]string{"Flow": "flow", "Input": "input", "Queue": "queue", "Cron": "cron",
	"TimeZone": "tz", "Missed": "missed"}

// scheduleInput is the --input of a schedule (from stdin for -).
func scheduleInput(e env, flow, input string, given bool) (json.RawMessage, int) {
	if !given {
		if err := inputOptional(flow); err != nil {
			errorLine(e, "%v", strings.Replace(err.Error(), "tasks enqueue", "schedules add", 1))
			return nil, exitUsage
		}
		return json.RawMessage("null"), -1
	}
	if input != "-" {
		return json.RawMessage(input), -1
	}
	raw, err := io.ReadAll(io.LimitReader(e.stdin, durable.MaxInputBytes+2))
	if err != nil {
		errorLine(e, "reading the input: %v", err)
		return nil, exitError
	}
	return json.RawMessage(strings.TrimRight(string(raw), "\r\n")), -1
}

func schedulesAdd(ctx context.Context, e env, c *durable.Client, s durable.Schedule) int {
	s, err := c.AddSchedule(ctx, s)
	if err != nil {
		errorLine(e, "schedules add: %v", err)
		switch {
		case errors.Is(err, durable.ErrUnknownFlow), errors.Is(err, durable.ErrInvalidInput), errors.Is(err, durable.ErrInputTooLarge),
			errors.Is(err, durable.ErrUnserved):
			return exitRejected
		case errors.Is(err, durable.ErrInvalidOption):
			return exitUsage
		}
		return exitError
	}
	fmt.Fprintf(e.stdout, "%s\tnext %s\n", s.Name, s.NextFireAt.UTC().Format(time.RFC3339))
	return exitOK
}

func schedulesList(ctx context.Context, e env, c *durable.Client, asJSON bool) int {
	list, err := c.Schedules(ctx)
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	if asJSON {
		if list == nil {
			list = []durable.Schedule{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFLOW\tQUEUE\tCRON\tTIME ZONE\tMISSED\tNEXT\tLAST\tFIRED\tLAST TASK")
	for _, s := range list {
		last := "-"
		if s.LastFiredAt != nil {
			last = s.LastFiredAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Flow, s.Queue, s.Cron, s.TimeZone, s.Missed,
			s.NextFireAt.UTC().Format(time.RFC3339), last, s.FiredTicks, orDash(s.LastTaskID))
	}
	tw.Flush()
	return exitOK
}
