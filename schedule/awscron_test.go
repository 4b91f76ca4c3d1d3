package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/schedule"
)

func TestAWSCronNext(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr, after string
		want        []string
	}{
		// Every day at 10:15 (the example in EventBridge's documentation).
		{"cron(15 10 * * ? *)", "2026-11-24T11:00:00Z", []string{"2026-11-25T10:15:00Z", "2026-11-26T10:15:00Z"}},
		// 1 is Sunday, 7 Saturday.
		{"cron(0 9 ? * 1 *)", "2026-11-24T00:00:00Z", []string{"2026-11-29T09:00:00Z", "2026-12-06T09:00:00Z"}},
		{"cron(0 9 ? * 7 *)", "2026-11-24T00:00:00Z", []string{"2026-11-28T09:00:00Z"}},
		{"cron(0 18 ? * MON-FRI *)", "2026-11-27T19:00:00Z", []string{"2026-11-30T18:00:00Z"}},
		{"cron(0/30 * ? * SAT,SUN *)", "2026-11-27T23:50:00Z", []string{"2026-11-28T00:00:00Z", "2026-11-28T00:30:00Z"}},
		// Month names with the letters of L and W (JUL, WED) are not AWS's L or W.
		{"cron(0 8 1 JUL ? *)", "2026-11-24T00:00:00Z", []string{"2027-07-01T08:00:00Z"}},
		{"cron(0 8 ? * WED *)", "2026-11-24T00:00:00Z", []string{"2026-11-25T08:00:00Z"}},
		// The year field.
		{"cron(0 0 1 1 ? 2030)", "2026-11-24T00:00:00Z", []string{"2030-01-01T00:00:00Z"}},
		{"cron(0 0 1 1 ? 2040-2050/5)", "2026-11-24T00:00:00Z", []string{"2040-01-01T00:00:00Z", "2045-01-01T00:00:00Z", "2050-01-01T00:00:00Z", ""}},
		{"cron(0 0 1 1 ? 2020)", "2026-11-24T00:00:00Z", []string{""}},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			t.Parallel()
			e, err := schedule.Parse(c.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			prev := at(c.after)
			for _, w := range c.want {
				got := e.Next(prev)
				if w == "" {
					if !got.IsZero() {
						t.Fatalf("Next(%s) = %s, want none", prev, got)
					}
					return
				}
				if !got.Equal(at(w)) {
					t.Fatalf("Next(%s) = %s, want %s", prev, got.UTC().Format(time.RFC3339), w)
				}
				prev = got
			}
		})
	}
}

func TestAWSCronInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct{ expr, field, reason string }{
		{"cron(0 10 * * *)", "", "wants 6 fields"},
		{"cron(0 10 * * ? *", "", "wants 6 fields"},
		{"cron(0 10 * * 1 *)", "", `"?" in exactly one`},
		{"cron(0 10 ? * ? *)", "", `"?" in exactly one`},
		{"cron(0 10 L * ? *)", "", "L, W and #"},
		{"cron(0 10 15W * ? *)", "", "L, W and #"},
		{"cron(0 10 ? * 6#3 *)", "", "L, W and #"},
		{"cron(0 10 ? * 5L *)", "", "L, W and #"},
		{"cron(0 10 ? * 0 *)", "day-of-week", "out of range 1-7"},
		{"cron(0 10 ? * 8 *)", "day-of-week", "out of range 1-7"},
		{"cron(0 10 * * ? 1969)", "year", "out of range 1970-2199"},
		{"cron(0 10 * * ? 2030-2020)", "year", "goes backwards"},
		{"cron(0 10 * * ? 2030/0)", "year", "step"},
		{"cron(0 10 31 4 ? *)", "day-of-month", "no month has such a day"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			t.Parallel()
			_, err := schedule.Parse(c.expr, nil)
			var pe *schedule.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want a *ParseError", c.expr, err)
			}
			if pe.Field != c.field || !strings.Contains(pe.Reason, c.reason) {
				t.Errorf("Parse(%q): field %q reason %q, want field %q reason containing %q", c.expr, pe.Field, pe.Reason, c.field, c.reason)
			}
		})
	}
}
