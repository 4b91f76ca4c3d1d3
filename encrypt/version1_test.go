package encrypt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// sealV1 seals plain as the encrypting World did before envelope version
// 2: bound to run and field only.
func sealV1(t *testing.T, k *runKey, runID string, p place, plain []byte) json.RawMessage {
	t.Helper()
	ct, err := seal(k.aead, plain, p.aad(runID, envelopeV1))
	if err != nil {
		t.Fatal(err)
	}
	env := envelope{Version: envelopeV1, Key: k.keyID, Data: ct}
	if withKey(p) {
		env.Wrapped = k.wrapped
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVersion1RunsStillOpen: a run sealed before envelope version 2 (no
// marker, a version-1 input) opens its version-1 payloads and takes new
// version-2 ones; a run sealed with version 2 refuses a version-1 payload
// (the key's, at the right place), so that no one downgrades its binding.
func TestVersion1RunsStillOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keys, err := NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, DataKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wrapSealed(lw, Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	const old, step1, step2 = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ1", "step_01JABCDEFGHJKMNPQRSTVWXYZ1", "step_01JABCDEFGHJKMNPQRSTVWXYZ2"
	k, err := w.newRunKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "wf", Input: sealV1(t, k, old, place{field: fieldRunInput}, []byte(`"old input"`))}},
		{Data: &world.RunStarted{}},
		{CorrelationID: step1, Data: &world.StepCreated{StepName: "s", Input: sealV1(t, k, old, place{field: fieldStepInput}, []byte(`1`))}},
		{CorrelationID: step1, Data: &world.StepStarted{}},
		{CorrelationID: step1, Data: &world.StepCompleted{Result: sealV1(t, k, old, place{field: fieldStepOutput}, []byte(`"old result"`))}},
	} {
		if _, err := lw.Append(ctx, &world.AppendParams{RunID: old, Events: []world.EventInput{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(ctx, &world.AppendParams{RunID: old, Events: []world.EventInput{{CorrelationID: step2, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`2`)}}}}); err != nil {
		t.Fatal(err)
	}
	fresh, _ := Wrap(lw, Config{Keys: keys})
	r, err := fresh.GetRun(ctx, &world.GetRunParams{RunID: old})
	if err != nil || string(r.Input) != `"old input"` {
		t.Fatalf("version-1 run: input %s, %v", r.Input, err)
	}
	for id, want := range map[string]string{step1: `"old result"`, step2: ``} {
		s, err := fresh.GetStep(ctx, &world.GetStepParams{RunID: old, StepID: id})
		if err != nil || string(s.Output) != want {
			t.Fatalf("version-1 run, step %s: output %s, %v", id, s.Output, err)
		}
	}
	if _, err := fresh.ListEvents(ctx, &world.ListEventsParams{RunID: old}); err != nil {
		t.Fatalf("version-1 run's events: %v", err)
	}

	// A version-2 run refuses a version-1 payload sealed with its own key.
	const run2 = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ4"
	for _, ev := range []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"new"`)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: step1, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`1`)}},
		{CorrelationID: step1, Data: &world.StepStarted{}},
	} {
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run2, Events: []world.EventInput{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	k2, _ := w.cached(run2)
	if _, err := lw.Append(ctx, &world.AppendParams{RunID: run2, Events: []world.EventInput{{CorrelationID: step1,
		Data: &world.StepCompleted{Result: sealV1(t, k2, run2, place{field: fieldStepOutput}, []byte(`"downgraded"`))}}}}); err != nil {
		t.Fatal(err)
	}
	fresh, _ = Wrap(lw, Config{Keys: keys})
	_, err = fresh.GetStep(ctx, &world.GetStepParams{RunID: run2, StepID: step1})
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("a version-1 payload in a version-2 run: %v, want ErrTampered", err)
	}
}

// wrapSealed is Wrap, for tests of the wrapper's own methods.
func wrapSealed(w world.World, cfg Config) (*sealedWorld, error) {
	ww, err := Wrap(w, cfg)
	if err != nil {
		return nil, err
	}
	return ww.(*sealedWorld), nil
}
