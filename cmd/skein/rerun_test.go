package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
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
	// The same rerun again starts nothing and says so.
	same := cli(append(db, "runs", "rerun", f.doneID, "-idempotency-key", "k1")...)
	same.expect(t, 0, "already exists for idempotency key \"k1\"", "no run was started")
	existing := regexp.MustCompile(`run (wrun_\w+) already exists`)
	if a, b := started.FindStringSubmatch(again.out), existing.FindStringSubmatch(same.out); a == nil || b == nil || a[1] != b[1] || a[1] == m[1] {
		t.Errorf("idempotency key: %q then %q (first rerun %s)", again.out, same.out, m[1])
	}
	if strings.Contains(same.out, "started run") {
		t.Errorf("a rerun whose key named an existing run said it started one: %q", same.out)
	}
	cli(append(db, "runs", "rerun", f.waitID)...).expect(t, 1, "is running, not finished")
	other := started.FindStringSubmatch(cli(append(db, "runs", "rerun", f.doneID, "-version", "v2.0")...).out)
	none := started.FindStringSubmatch(cli(append(db, "runs", "rerun", f.doneID, "-version", "-")...).out)
	if other == nil || none == nil {
		t.Fatal("rerun -version started no run")
	}

	// A key that names another run (other input) is taken: exit 1.
	{
		w, err := localworld.Open(localworld.Config{Path: f.db})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(client.Config{World: w})
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.Start(context.Background(), "demo", "another input", client.WithIdempotencyKey("order-G"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		taken := cli(append(db, "runs", "rerun", f.doneID, "-idempotency-key", "order-G")...)
		taken.expect(t, 1, `idempotency key "order-G" already names run `+g, "no run was started")
		if strings.Contains(taken.out, "started run") {
			t.Errorf("rerun with a taken key said it started a run: %q", taken.out)
		}
	}

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
	if nu.WorkflowName != "demo" || nu.Status != world.RunStatusPending || !bytes.Equal(nu.Input, old.Input) || nu.Version != "v1.0" {
		t.Errorf("rerun: workflow %q status %s input %s version %q; want demo, pending, %s, the old run's v1.0", nu.WorkflowName, nu.Status, nu.Input, nu.Version, old.Input)
	}
	for id, want := range map[string]string{other[1]: "v2.0", none[1]: ""} {
		if r, err := w.GetRun(ctx, &world.GetRunParams{RunID: id}); err != nil || r.Version != want {
			t.Errorf("rerun -version: run %+v, %v; want version %q", r, err, want)
		}
	}
}

// TestRunsRerunScheduled: a rerun of a schedule's run is not a firing of
// the schedule: it keeps the run's attributes but the SDK's own
// (worker.AttrSchedule, AttrScheduledTime), which callers may not set.
func TestRunsRerunScheduled(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	w, err := localworld.Open(localworld.Config{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	id := world.NewIDSource(nil, nil).New(world.PrefixRun)
	attrs := map[string]string{worker.AttrSchedule: "nightly", worker.AttrScheduledTime: "2026-01-01T00:00:00Z", "team": "ops"}
	for _, ev := range []world.EventData{&world.RunCreated{WorkflowName: "demo", Input: []byte(`"x"`), Attributes: attrs}, &world.RunStarted{}, &world.RunCompleted{Output: []byte(`1`)}} {
		if _, err := w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: ev}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := cli("-db", f.db, "runs", "rerun", id)
	r.expect(t, 0, "started run")
	m := regexp.MustCompile(`started run (wrun_\w+)`).FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("no run ID in %q", r.out)
	}
	w, err = localworld.Open(localworld.Config{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: m[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["team"] != "ops" || len(got.Attributes) != 1 {
		t.Errorf("the rerun's attributes %v; want team=ops alone", got.Attributes)
	}
}
