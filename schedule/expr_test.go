package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/schedule"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s: %v", name, err)
	}
	return loc
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr, field, reason string
	}{
		{"", "", "empty"},
		{"* * * *", "", "want 5 fields"},
		{"* * * * * *", "", "want 5 fields"},
		{"60 * * * *", "minute", "60 is out of range 0-59"},
		{"* 24 * * *", "hour", "24 is out of range 0-23"},
		{"* * 0 * *", "day-of-month", "out of range 1-31"},
		{"* * * 13 *", "month", "out of range 1-12"},
		{"* * * * 8", "day-of-week", "out of range 0-7"},
		{"* * * FOO *", "month", `"FOO" is not a number`},
		{"*/0 * * * *", "minute", "step"},
		{"*/x * * * *", "minute", "step"},
		{"10-5 * * * *", "minute", "goes backwards"},
		{"1,,2 * * * *", "minute", "empty value"},
		{"? * * * *", "minute", `"?" is not a number`},
		{"0 0 31 4 *", "day-of-month", "no month has such a day"},
		{"0 0 30 2 *", "day-of-month", "no month has such a day"},
		{"@fortnightly", "", "unknown descriptor"},
		{"@every", "", "@every wants a duration"},
		{"@every soon", "", "@every wants a duration"},
		{"@every 500ms", "", "at least 1s"},
		{"@every 1500ms", "", "whole seconds"},
		{"@every -5m", "", "at least 1s"},
		{"rate(5 minutes", "", "rate wants rate"},
		{"rate(0 minutes)", "", "positive whole number"},
		{"rate(5 weeks)", "", "rate unit"},
		{"rate(1 minutes)", "", "write 1 minute"},
		{"rate(5 minute)", "", "write 5 minutes"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			t.Parallel()
			_, err := schedule.Parse(c.expr, nil)
			var pe *schedule.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want a *ParseError", c.expr, err)
			}
			if pe.Expr != c.expr || pe.Field != c.field || !strings.Contains(pe.Reason, c.reason) {
				t.Errorf("Parse(%q) = %+v, want field %q and a reason with %q", c.expr, pe, c.field, c.reason)
			}
			if !strings.Contains(err.Error(), c.expr) {
				t.Errorf("error %q does not name the expression", err)
			}
		})
	}
}

func TestNext(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		expr  string
		zone  string
		after string
		want  []string // successive firings, RFC 3339 with offsets
	}{
		{"* * * * *", "", "2026-01-01T00:00:30Z", []string{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"}},
		{"*/15 * * * *", "", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z"}},
		{"5/20 9-10 * * *", "", "2026-01-01T09:30:00Z", []string{"2026-01-01T09:45:00Z", "2026-01-01T10:05:00Z", "2026-01-01T10:25:00Z", "2026-01-01T10:45:00Z", "2026-01-02T09:05:00Z"}},
		{"0 12 * * MON-FRI", "", "2026-11-20T12:00:00Z", []string{"2026-11-23T12:00:00Z", "2026-11-24T12:00:00Z"}}, // Friday -> Monday
		{"0 0 * * 7", "", "2026-11-24T00:00:00Z", []string{"2026-11-29T00:00:00Z"}},                                // 7 is Sunday
		{"0 0 1 * MON", "", "2026-11-24T00:00:00Z", []string{"2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z"}},
		{"0 0 29 2 *", "", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 31 * *", "", "2026-04-01T00:00:00Z", []string{"2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}},
		{"@monthly", "", "2026-12-15T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@hourly", "", "2026-12-31T23:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"0 9 * * *", "Europe/Paris", "2026-01-01T00:00:00Z", []string{"2026-01-01T09:00:00+01:00", "2026-01-02T09:00:00+01:00"}},
		// Spring forward (29 March 2026, 02:00 -> 03:00 in Paris): 02:30 does not exist that day.
		{"30 2 * * *", "Europe/Paris", "2026-03-28T03:00:00+01:00", []string{"2026-03-30T02:30:00+02:00"}},
		{"0 * * * *", "Europe/Paris", "2026-03-29T00:30:00+01:00", []string{"2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"}},
		// Fall back (25 October 2026, 03:00 -> 02:00 in Paris): 02:30 occurs twice and fires once, the first time.
		{"30 2 * * *", "Europe/Paris", "2026-10-24T03:00:00+02:00", []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"*/30 * * * *", "Europe/Paris", "2026-10-25T01:45:00+02:00", []string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T03:00:00+01:00"}},
		// A half-hour zone.
		{"0 9 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", []string{"2026-01-01T09:00:00+05:30"}},
		// Fixed rates are anchored at the epoch, whatever the zone.
		{"@every 5m", "", "2026-01-01T00:03:10Z", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"}},
		{"@every 5m", "Asia/Kolkata", "2026-01-01T00:05:00Z", []string{"2026-01-01T00:10:00Z"}},
		{"rate(1 hour)", "", "2026-01-01T00:00:00.5Z", []string{"2026-01-01T01:00:00Z"}},
		{"rate(2 days)", "", "2026-01-01T00:00:00Z", []string{"2026-01-03T00:00:00Z", "2026-01-05T00:00:00Z"}},
		{"@every 7s", "", "1969-12-31T23:59:50Z", []string{"1969-12-31T23:59:53Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:07Z"}},
	}
	for _, c := range cases {
		t.Run(c.expr+"/"+c.zone+"/"+c.after, func(t *testing.T) {
			t.Parallel()
			loc := time.UTC
			if c.zone != "" {
				loc = mustLoad(t, c.zone)
			}
			e, err := schedule.Parse(c.expr, loc)
			if err != nil {
				t.Fatal(err)
			}
			at := utc(c.after)
			for i, w := range c.want {
				at = e.Next(at)
				if want := utc(w); !at.Equal(want) {
					t.Fatalf("firing %d after %s: got %s, want %s", i, c.after, at.Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"0 0 * * *", " 0 0 * * * ", "0 0 ? * mon", "0 0 1 jan,jul *", "0-59/10 0-23/6 1-31/2 1-12/3 0-7/2",
		"@yearly", "@annually", "@weekly", "@daily", "@midnight", "@DAILY", "@every 1h30m", "rate(1 minute)", "rate(3 days)",
	} {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()
			e, err := schedule.Parse(expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e.String() != expr || e.Location() != time.UTC {
				t.Errorf("String() = %q, Location() = %v", e.String(), e.Location())
			}
			now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
			if n := e.Next(now); !n.After(now) || n.Sub(now) > 366*24*time.Hour {
				t.Errorf("Next(%s) = %s", now, n)
			}
		})
	}
}
