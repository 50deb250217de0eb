// Package cron parses the schedule specifications of durable schedules
// (docs/durable.md#schedules) and computes their ticks.
//
// A specification is five fields, minute (0–59), hour (0–23), day of the
// month (1–31), month (1–12 or jan–dec) and day of the week (0–7, 0 and 7
// both Sunday, or sun–sat), separated by blanks. A field is "*" or a
// comma-separated list of values, ranges "a-b" and steps "*/n", "a-b/n"
// or "a/n" (a to the field's maximum). Names are case-insensitive. As in
// the classic cron, when both the day of the month and the day of the
// week are restricted (neither starts with "*"), a day matches either.
//
// The shorthands @yearly (@annually), @monthly, @weekly, @daily
// (@midnight) and @hourly stand for their five-field forms, and
// "@every D" fires every D (a Go duration of whole seconds, 1 s to
// MaxEvery), counted from the previous tick, whatever the time zone.
//
// Ticks are computed in a time zone's local time. A local time that a
// daylight-saving change skips fires at the first valid instant after
// the gap (the transition itself); a local time that occurs twice fires
// once, at its first occurrence.
package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	// Every worker must resolve a schedule's time zone the same way,
	// also in a container without system time zone data.
	_ "time/tzdata"
)

// Bounds of a specification.
const (
	// MaxSpecLen is the longest specification accepted, in bytes.
	MaxSpecLen = 256
	// MaxEvery is the longest @every interval: a year of days.
	MaxEvery = 366 * 24 * time.Hour
)

// ErrSyntax is the error every refused specification matches.
var ErrSyntax = errors.New("cron: invalid schedule")

// Schedule is a parsed specification.
type Schedule struct {
	spec  string
	every time.Duration // @every; the fields are unused then
	// Bit i of a field is set when the value i matches.
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

// String is the specification as given.
func (s *Schedule) String() string { return s.spec }

// Every is the interval of an @every schedule (0 for a five-field one).
func (s *Schedule) Every() time.Duration { return s.every }

var shorthands = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dowNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	fields     = [5]field{
		{name: "minute", min: 0, max: 59},
		{name: "hour", min: 0, max: 23},
		{name: "day of month", min: 1, max: 31},
		{name: "month", min: 1, max: 12, names: monthNames},
		{name: "day of week", min: 0, max: 7, names: dowNames},
	}
)

func syntaxError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSyntax, fmt.Sprintf(format, args...))
}

// Parse parses a specification (see the package comment).
func Parse(spec string) (*Schedule, error) {
	if len(spec) > MaxSpecLen {
		return nil, syntaxError("%d bytes, the limit is %d", len(spec), MaxSpecLen)
	}
	s := &Schedule{spec: spec}
	text := strings.TrimSpace(spec)
	if strings.HasPrefix(text, "@") {
		word, rest, _ := strings.Cut(text, " ")
		word = strings.ToLower(word)
		if word == "@every" {
			d, err := time.ParseDuration(strings.TrimSpace(rest))
			if err != nil {
				return nil, syntaxError("@every: %v", err)
			}
			if d < time.Second || d > MaxEvery || d%time.Second != 0 {
				return nil, syntaxError("@every %v: the interval is a whole number of seconds from 1s to %v", d, MaxEvery)
			}
			s.every = d
			return s, nil
		}
		long, ok := shorthands[word]
		if !ok || strings.TrimSpace(rest) != "" {
			return nil, syntaxError("%q is not @every D, @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", text)
		}
		text = long
	}
	parts := strings.Fields(text)
	if len(parts) != 5 {
		return nil, syntaxError("%d fields, want 5 (minute hour day-of-month month day-of-week) or an @ shorthand", len(parts))
	}
	var bits [5]uint64
	for i, p := range parts {
		b, err := parseField(p, fields[i])
		if err != nil {
			return nil, err
		}
		bits[i] = b
	}
	s.minute, s.hour, s.dom, s.month, s.dow = bits[0], bits[1], bits[2], bits[3], bits[4]
	if s.dow&(1<<7) != 0 { // 7 is Sunday too
		s.dow |= 1
		s.dow &^= 1 << 7
	}
	s.domStar, s.dowStar = strings.HasPrefix(parts[2], "*"), strings.HasPrefix(parts[4], "*")
	if s.dowStar && !s.possibleDay() {
		return nil, syntaxError("no month of %q has one of the days %q", parts[3], parts[2])
	}
	return s, nil
}

// possibleDay reports whether some month of the schedule has one of its
// days of the month (February counted with 29 days).
func (s *Schedule) possibleDay() bool {
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= days[m]; d++ {
			if s.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

func parseField(text string, f field) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(text, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, err
			}
			if hi, err = value(b, f); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, syntaxError("%s: range %q runs backwards", f.name, rng)
			}
		default:
			v, err := value(rng, f)
			if err != nil {
				return 0, err
			}
			lo = v
			if !hasStep {
				hi = v
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max-f.min+1 {
				return 0, syntaxError("%s: step %q is not a number from 1 to %d", f.name, stepText, f.max-f.min+1)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

// value is one value of field f: a number in its bounds or a name.
func value(text string, f field) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil || text == "" || text[0] == '+' || text[0] == '-' {
		return 0, syntaxError("%s: %q is not a number from %d to %d%s", f.name, text, f.min, f.max, nameHint(f))
	}
	if n < f.min || n > f.max {
		return 0, syntaxError("%s: %d is outside %d to %d", f.name, n, f.min, f.max)
	}
	return n, nil
}

func nameHint(f field) string {
	if f.names == nil {
		return ""
	}
	return " or one of " + strings.Join(f.names, ", ")
}

// searchDays bounds the search for the next matching day: eight years
// cover every February 29 (2096 to 2104 has none, at most).
const searchDays = 8*366 + 2

// Next is the first tick strictly after after, in loc's local time (UTC
// when loc is nil). An @every schedule's next tick is after plus its
// interval. The zero time means there is none within eight years (not
// for a specification Parse accepted).
func (s *Schedule) Next(after time.Time, loc *time.Location) time.Time {
	if s.every > 0 {
		return after.Add(s.every)
	}
	if loc == nil {
		loc = time.UTC
	}
	local := after.In(loc)
	y, mo, d := local.Date()
	startHour, startMin := local.Hour(), local.Minute()
	for day := range searchDays {
		date := time.Date(y, mo, d+day, 0, 0, 0, 0, time.UTC)
		if s.month&(1<<int(date.Month())) == 0 || !s.dayMatches(date) {
			continue
		}
		h0 := 0
		if day == 0 {
			h0 = startHour
		}
		for h := h0; h < 24; h++ {
			if s.hour&(1<<h) == 0 {
				continue
			}
			m0 := 0
			if day == 0 && h == startHour {
				m0 = startMin
			}
			for m := m0; m < 60; m++ {
				if s.minute&(1<<m) == 0 {
					continue
				}
				if t, ok := resolve(date.Year(), date.Month(), date.Day(), h, m, loc); ok && t.After(after) {
					return t
				}
			}
		}
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(date time.Time) bool {
	dom := s.dom&(1<<date.Day()) != 0
	dow := s.dow&(1<<int(date.Weekday())) != 0
	switch {
	case s.domStar || s.dowStar:
		return dom && dow // a "*" field matches every day
	default:
		return dom || dow
	}
}

// resolve is the instant of the local time y-mo-d h:m in loc: its first
// occurrence when it occurs twice, the end of the gap when a transition
// skips it. ok is false for the second of two equal instants (never).
func resolve(y int, mo time.Month, d, h, m int, loc *time.Location) (time.Time, bool) {
	civil := time.Date(y, mo, d, h, m, 0, 0, time.UTC)
	t := time.Date(y, mo, d, h, m, 0, 0, loc)
	start, end := t.ZoneBounds()
	probes := []time.Time{t}
	if !start.IsZero() {
		probes = append(probes, start.Add(-time.Nanosecond))
	}
	if !end.IsZero() {
		probes = append(probes, end)
	}
	var best time.Time
	for _, p := range probes {
		_, off := p.Zone()
		u := civil.Add(-time.Duration(off) * time.Second)
		if sameCivil(u.In(loc), civil) && (best.IsZero() || u.Before(best)) {
			best = u
		}
	}
	if !best.IsZero() {
		return best, true
	}
	// Skipped: the first valid instant after the gap is the transition,
	// the start of t's zone when t reads later than the skipped time,
	// else its end.
	if wallClock(t.In(loc)).After(civil) {
		return start, !start.IsZero()
	}
	return end, !end.IsZero()
}

// sameCivil reports whether local reads the wall-clock time civil.
func sameCivil(local, civil time.Time) bool { return wallClock(local).Equal(civil) }

// wallClock is local's wall-clock reading as a UTC time.
func wallClock(local time.Time) time.Time {
	y, mo, d := local.Date()
	return time.Date(y, mo, d, local.Hour(), local.Minute(), local.Second(), local.Nanosecond(), time.UTC)
}
