package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseRefuses(t *testing.T) {
	for _, spec := range []string{
		"", "* * * *", "* * * * * *", "60 * * * *", "-1 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *",
		"* * * 13 *", "* * * 0 *", "* * * * 8", "5-1 * * * *", "*/0 * * * *", "*/61 * * * *", "a * * * *",
		"1,,2 * * * *", "*-5 * * * *", "+5 * * * *", "* * * foo *", "* * * * funday", "0 0 30 2 *", "0 0 31 4,6,9,11 *",
		"@every", "@every 0s", "@every -1s", "@every 1500ms", "@every 8785h", "@every x", "@weekly 1", "@never",
		strings.Repeat(" ", MaxSpecLen-8) + "* * * * *",
	} {
		if _, err := Parse(spec); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", spec, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for _, spec := range []string{
		"* * * * *", "*/5 * * * *", "0-59/15 0,12 1-31 * *", "5/10 * * * *", "0 0 * jan-MAR mon-fri", "0 0 * * 7",
		"0 0 29 2 *", "0 0 30 2 1", "@every 1s", "@every 8784h", "@hourly", "@DAILY", "@midnight", "@weekly", "@monthly",
		"@yearly", "@annually", "*/60 * * * *", "  1 2 3 4 5  ",
		strings.Repeat(" ", MaxSpecLen-9) + "* * * * *",
	} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
}

// TestBounds checks every bound at the limit and one over.
func TestBounds(t *testing.T) {
	cases := []struct {
		spec string
		ok   bool
	}{
		{"59 23 31 12 7", true}, {"60 23 31 12 7", false}, {"59 24 31 12 7", false}, {"59 23 32 12 7", false},
		{"59 23 31 13 7", false}, {"59 23 31 12 8", false}, {"0 0 1 1 0", true}, {"0 0 0 1 0", false}, {"0 0 1 0 0", false},
		{"*/60 * * * *", true}, {"*/61 * * * *", false}, {"* */24 * * *", true}, {"* */25 * * *", false},
		{"@every 1s", true}, {"@every 999ms", false}, {"@every 8784h", true}, {"@every 8784h1s", false},
		{strings.Repeat("0", MaxSpecLen-8) + " * * * *", true}, {strings.Repeat("0", MaxSpecLen-7) + " * * * *", false},
	}
	for _, c := range cases {
		_, err := Parse(c.spec)
		if (err == nil) != c.ok {
			t.Errorf("Parse(%.40q…) = %v, want ok %v", c.spec, err, c.ok)
		}
	}
}

func TestNext(t *testing.T) {
	utc := time.UTC
	berlin := mustLoc(t, "Europe/Berlin")
	ny := mustLoc(t, "America/New_York")
	at := func(loc *time.Location, s string) time.Time {
		t.Helper()
		v, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name, spec string
		loc        *time.Location
		after      time.Time
		want       []time.Time // the next ticks in turn
	}{
		{"every minute", "* * * * *", utc, at(utc, "2026-01-01 10:00:30"),
			[]time.Time{at(utc, "2026-01-01 10:01:00"), at(utc, "2026-01-01 10:02:00")}},
		{"exactly at a tick is after it", "*/5 * * * *", utc, at(utc, "2026-01-01 10:05:00"),
			[]time.Time{at(utc, "2026-01-01 10:10:00"), at(utc, "2026-01-01 10:15:00")}},
		{"step from a value", "7/20 * * * *", utc, at(utc, "2026-01-01 10:00:00"),
			[]time.Time{at(utc, "2026-01-01 10:07:00"), at(utc, "2026-01-01 10:27:00"), at(utc, "2026-01-01 10:47:00"), at(utc, "2026-01-01 11:07:00")}},
		{"names and ranges", "30 9 * jan mon-fri", utc, at(utc, "2026-01-02 10:00:00"), // a Friday
			[]time.Time{at(utc, "2026-01-05 09:30:00"), at(utc, "2026-01-06 09:30:00")}},
		{"dom or dow when both restricted", "0 0 13 * 5", utc, at(utc, "2026-02-01 00:00:00"),
			[]time.Time{at(utc, "2026-02-06 00:00:00"), at(utc, "2026-02-13 00:00:00"), at(utc, "2026-02-20 00:00:00")}},
		{"sunday as 7", "0 12 * * 7", utc, at(utc, "2026-03-02 00:00:00"), []time.Time{at(utc, "2026-03-08 12:00:00")}},
		{"leap day", "0 0 29 2 *", utc, at(utc, "2026-03-01 00:00:00"),
			[]time.Time{at(utc, "2028-02-29 00:00:00"), at(utc, "2032-02-29 00:00:00")}},
		{"month end", "@monthly", utc, at(utc, "2026-12-15 00:00:00"),
			[]time.Time{at(utc, "2027-01-01 00:00:00"), at(utc, "2027-02-01 00:00:00")}},
		{"hourly", "@hourly", utc, at(utc, "2026-01-01 23:59:59"), []time.Time{at(utc, "2026-01-02 00:00:00")}},
		{"every", "@every 90s", utc, at(utc, "2026-01-01 10:00:00"),
			[]time.Time{at(utc, "2026-01-01 10:01:30"), at(utc, "2026-01-01 10:03:00")}},
		{"time zone", "0 9 * * *", berlin, at(utc, "2026-01-01 00:00:00"),
			[]time.Time{at(utc, "2026-01-01 08:00:00"), at(utc, "2026-01-02 08:00:00")}},
		// 2026-03-29 02:00 CET → 03:00 CEST in Berlin: 02:30 does not exist.
		{"skipped local time fires at the gap's end", "30 2 * * *", berlin, at(berlin, "2026-03-28 12:00:00"),
			[]time.Time{at(berlin, "2026-03-29 03:00:00"), at(berlin, "2026-03-30 02:30:00")}},
		{"ticks of a skipped hour fire once", "*/20 * * * *", berlin, at(berlin, "2026-03-29 01:50:00"),
			[]time.Time{at(berlin, "2026-03-29 03:00:00"), at(berlin, "2026-03-29 03:20:00")}},
		// 2026-10-25 03:00 CEST → 02:00 CET: 02:00–02:59 occur twice.
		{"repeated local time fires once", "30 2 * * *", berlin, at(berlin, "2026-10-24 12:00:00"),
			[]time.Time{at(utc, "2026-10-25 00:30:00"), at(berlin, "2026-10-26 02:30:00")}},
		{"repeated hour fires its minutes once", "0,30 * * * *", berlin, at(utc, "2026-10-24 23:45:00"),
			[]time.Time{at(utc, "2026-10-25 00:00:00"), at(utc, "2026-10-25 00:30:00"), at(utc, "2026-10-25 02:00:00"), at(utc, "2026-10-25 02:30:00")}},
		// 2026-03-08 02:00 EST → 03:00 EDT in New York.
		{"new york gap", "15 2 * * *", ny, at(ny, "2026-03-07 12:00:00"),
			[]time.Time{at(ny, "2026-03-08 03:00:00"), at(ny, "2026-03-09 02:15:00")}},
		{"nil location is UTC", "0 0 * * *", nil, at(utc, "2026-01-01 00:00:00"), []time.Time{at(utc, "2026-01-02 00:00:00")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			after := c.after
			for i, want := range c.want {
				got := s.Next(after, c.loc)
				if !got.Equal(want) {
					t.Fatalf("tick %d after %v: got %v, want %v", i+1, after, got.UTC(), want.UTC())
				}
				after = got
			}
		})
	}
}

// TestNextDSTWholeYear walks a year of quarter-hour ticks in zones with
// transitions: ticks strictly increase, each is a quarter hour of wall
// time or a transition, and a day has no two ticks of one wall time.
func TestNextDSTWholeYear(t *testing.T) {
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"} {
		loc := mustLoc(t, zone)
		s, err := Parse("*/15 * * * *")
		if err != nil {
			t.Fatal(err)
		}
		tick := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		seen := map[time.Time]bool{}
		for range 366 * 96 {
			next := s.Next(tick, loc)
			if !next.After(tick) {
				t.Fatalf("%s: %v after %v", zone, next, tick)
			}
			wall := wallClock(next.In(loc))
			if seen[wall] {
				t.Fatalf("%s: wall time %v fired twice", zone, wall)
			}
			seen[wall] = true
			if wall.Minute()%15 != 0 {
				if start, _ := next.ZoneBounds(); !start.Equal(next) {
					t.Fatalf("%s: %v is neither a quarter hour nor a transition", zone, next.In(loc))
				}
			}
			tick = next
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 1,15 jan-dec mon-fri", "@every 1m", "@daily", "0 0 29 2 *", "5/7 * * * 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v does not match ErrSyntax", spec, err)
			}
			return
		}
		if s.String() != spec {
			t.Fatalf("String() = %q, want %q", s.String(), spec)
		}
		after := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
		next := s.Next(after, time.UTC)
		if next.IsZero() || !next.After(after) {
			t.Fatalf("Parse(%q).Next(%v) = %v", spec, after, next)
		}
	})
}
