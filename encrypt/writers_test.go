package encrypt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

const hookH = "hook_01JABCDEFGHJKMNPQRSTVWXYZH"

// hookRun creates run with a hook holding token through w.
func hookRun(t *testing.T, w world.World, run, token string) {
	t.Helper()
	appendAll(t, w, run,
		world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`1`)}},
		world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: hookH, Data: &world.HookCreated{Token: token}})
}

func eventCount(t *testing.T, w world.World, run string) int {
	t.Helper()
	evs, err := runrules.AllEvents(context.Background(), w, run)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// TestKeylessClientResumeHookRefused: a client whose World does not seal
// refuses to deliver a hook payload to a sealed run, says why, and writes
// nothing (before, the payload was stored in clear, and the run could
// never read it).
func TestKeylessClientResumeHookRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	hookRun(t, reader(t, lw, keyring(t, "k1", map[string][]byte{"k1": key(1)})), runA, "tok-sealed")
	before := eventCount(t, lw, runA)
	c, err := client.New(client.Config{World: lw})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ResumeHook(ctx, "tok-sealed", 5)
	if !errors.Is(err, world.ErrKeyUnavailable) || !strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("ResumeHook into a sealed run without the key: %v, want a refusal naming key k1", err)
	}
	if after := eventCount(t, lw, runA); after != before {
		t.Fatalf("%d events after the refusal, want %d", after, before)
	}
}

// TestEnvelopeShapedPayloadInClearRun: a run created before encryption was
// turned on is in clear for good: a hook payload shaped like an envelope,
// sent through an encrypting client, is its data. ResumeHook reports the
// commit as done, and the run stays readable (before, ResumeHook failed
// after committing and every read of the run was a key error).
func TestEnvelopeShapedPayloadInClearRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA)
	hookRun(t, tw.World, runB, "tok-clear") // no wrapper: in clear
	a, err := tw.World.GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	ew := reader(t, tw, keys)
	c, err := client.New(client.Config{World: ew})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResumeHook(ctx, "tok-clear", a.Output); err != nil {
		t.Fatalf("ResumeHook of an envelope-shaped payload into a run in clear: %v", err)
	}
	for _, r := range []world.World{ew, reader(t, tw, keys)} {
		evs, err := runrules.AllEvents(ctx, r, runB)
		if err != nil {
			t.Fatalf("reading the run in clear: %v", err)
		}
		last, ok := evs[len(evs)-1].Data.(*world.HookReceived)
		if !ok || string(last.Payload) != string(a.Output) {
			t.Fatalf("the payload reads back as %s, want the bytes sent", last.Payload)
		}
		if _, err := r.GetRun(ctx, &world.GetRunParams{RunID: runB}); err != nil {
			t.Fatal(err)
		}
	}
}
