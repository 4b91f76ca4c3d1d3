package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestRunsListByAttribute: runs list -attr key=value lists the runs with
// the attribute, set at creation or afterwards, with the other filters;
// runs show prints a run's attributes.
func TestRunsListByAttribute(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	ids := world.NewIDSource(nil, nil)
	mk := func(wf string, evs ...world.EventData) string {
		id := ids.New(world.PrefixRun)
		for _, d := range evs {
			if _, err := w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: d}}}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	acme := mk("billing", &world.RunCreated{WorkflowName: "billing", Attributes: map[string]string{"tenant": "acme"}})
	later := mk("billing", &world.RunCreated{WorkflowName: "billing"}, &world.RunStarted{},
		&world.AttributeSet{Attributes: map[string]string{"tenant": "acme", "note": "a=b c"}})
	other := mk("shipping", &world.RunCreated{WorkflowName: "shipping", Attributes: map[string]string{"tenant": "globex"}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := []string{"-db", db}

	r := cli(append(db2, "runs", "list", "-attr", "tenant=acme")...)
	r.expect(t, 0, acme, later)
	if strings.Contains(r.out, other) || strings.Index(r.out, later) > strings.Index(r.out, acme) {
		t.Fatalf("-attr tenant=acme: want the two acme runs newest first:\n%s", r.out)
	}
	r = cli(append(db2, "runs", "list", "-attr", "tenant=acme", "-status", "running")...)
	r.expect(t, 0, later)
	if strings.Contains(r.out, acme) {
		t.Fatalf("-attr with -status running lists the pending run:\n%s", r.out)
	}
	cli(append(db2, "runs", "list", "-attr", "note=a=b c")...).expect(t, 0, later) // the value may hold "="
	cli(append(db2, "runs", "list", "-attr", "tenant=acme", "-workflow", "shipping")...).expect(t, 0, "no runs")
	cli(append(db2, "runs", "list", "-attr", "tenant")...).expect(t, 2, "want key=value")
	cli(append(db2, "runs", "list", "-attr", "bad key=1")...).expect(t, 2, `"bad key"`)
	cli(append(db2, "runs", "show", later)...).expect(t, 0, "Attributes", `"tenant":"acme"`, `"note":"a=b c"`)
}
