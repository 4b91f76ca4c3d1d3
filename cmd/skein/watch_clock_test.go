package main

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestTimerLinesCarryTheirDate: a sleep's end on another day than its
// event says which day; one on the same day shows the clock alone.
func TestTimerLinesCarryTheirDate(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.Local)
	for _, c := range []struct {
		sleep time.Duration
		want  string
	}{
		{2 * time.Hour, "until 11:00:00.000"},
		{48 * time.Hour, "until 2026-11-30 09:00:00.000"},
	} {
		ev := &world.Event{CreatedAt: at, Data: &world.WaitCreated{ResumeAt: at.Add(c.sleep)}}
		if got := eventDetail(ev, false); got != c.want {
			t.Errorf("sleep %v: %q, want %q", c.sleep, got, c.want)
		}
	}
	ev := &world.Event{CreatedAt: at, Data: &world.CompRetryScheduled{RetryAfter: at.Add(30 * time.Hour)}}
	if got := eventDetail(ev, false); !strings.Contains(got, "retry at 2026-11-29 15:00:00.000") {
		t.Errorf("comp retry a day later: %q", got)
	}
}
