package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// runs rerun starts a new run of a finished run's workflow with its input;
// an idempotency key makes it start one run however often it is given;
// an unfinished run is refused.
func TestRunsRerun(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	db := []string{"-db", f.db}
	started := regexp.MustCompile(`started run (wrun_\w+)`)
	r := cli(append(db, "runs", "rerun", f.doneID)...)
	r.expect(t, 0, "started run", "demo, the input of "+f.doneID)
	m := started.FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("no run ID in %q", r.out)
	}
	again := cli(append(db, "runs", "rerun", f.doneID, "-idempotency-key", "k1")...)
	again.expect(t, 0, "started run")
	same := cli(append(db, "runs", "rerun", f.doneID, "-idempotency-key", "k1")...)
	same.expect(t, 0, "started run")
	if a, b := started.FindStringSubmatch(again.out), started.FindStringSubmatch(same.out); a == nil || b == nil || a[1] != b[1] || a[1] == m[1] {
		t.Errorf("idempotency key: %q then %q (first rerun %s)", again.out, same.out, m[1])
	}
	cli(append(db, "runs", "rerun", f.waitID)...).expect(t, 1, "is running, not finished")

	w, err := localworld.Open(localworld.Config{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	old, err := w.GetRun(ctx, &world.GetRunParams{RunID: f.doneID})
	if err != nil {
		t.Fatal(err)
	}
	nu, err := w.GetRun(ctx, &world.GetRunParams{RunID: m[1]})
	if err != nil {
		t.Fatal(err)
	}
	if nu.WorkflowName != "demo" || nu.Status != world.RunStatusPending || !bytes.Equal(nu.Input, old.Input) {
		t.Errorf("rerun: workflow %q status %s input %s; want demo, pending, %s", nu.WorkflowName, nu.Status, nu.Input, old.Input)
	}
}
