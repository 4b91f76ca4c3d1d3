package main

import (
	"strings"
	"testing"
)

// runs cancel -compensate records a cancellation that asks for the run's
// compensations (run_cancelled with compensate), and says so.
func TestCLICancelCompensate(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	db := []string{"-db", f.db}
	cli(append(db, "runs", "cancel", f.waitID, "-compensate")...).expect(t, 0, "cancelled run "+f.waitID, "its completed steps compensated")
	r := cli(append(db, "runs", "events", f.waitID)...)
	r.expect(t, 0)
	found := false
	for line := range strings.Lines(r.out) {
		if strings.Contains(line, `"run_cancelled"`) {
			found = strings.Contains(line, `"compensate":true`)
		}
	}
	if !found {
		t.Errorf("run_cancelled does not ask for compensation:\n%s", r.out)
	}
}
