package encrypt_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// tamperWorld is a store an attacker (or a bad disk) has written to: every
// run, step and event it returns passes through edit first, as if the
// stored bytes were so.
type tamperWorld struct {
	world.World
	mu   sync.Mutex
	run  func(r *world.Run)
	step func(s *world.Step)
	ev   func(e *world.Event)
}

func (w *tamperWorld) set(run func(*world.Run), step func(*world.Step), ev func(*world.Event)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.run, w.step, w.ev = run, step, ev
}

func (w *tamperWorld) edits() (func(*world.Run), func(*world.Step), func(*world.Event)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.run, w.step, w.ev
}

func (w *tamperWorld) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	r, err := w.World.GetRun(ctx, p)
	if edit, _, _ := w.edits(); err == nil && edit != nil {
		c := *r
		edit(&c)
		r = &c
	}
	return r, err
}

func (w *tamperWorld) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	page, err := w.World.ListRuns(ctx, p)
	if edit, _, _ := w.edits(); err == nil && edit != nil {
		c := *page
		c.Items = make([]world.Run, len(page.Items))
		for i, r := range page.Items {
			c.Items[i] = r
			edit(&c.Items[i])
		}
		page = &c
	}
	return page, err
}

func (w *tamperWorld) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	s, err := w.World.GetStep(ctx, p)
	if _, edit, _ := w.edits(); err == nil && edit != nil {
		c := *s
		edit(&c)
		s = &c
	}
	return s, err
}

func (w *tamperWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	page, err := w.World.ListEvents(ctx, p)
	if _, _, edit := w.edits(); err == nil && edit != nil {
		c := *page
		c.Items = make([]world.Event, len(page.Items))
		for i, ev := range page.Items {
			c.Items[i] = ev
			edit(&c.Items[i])
		}
		page = &c
	}
	return page, err
}

const (
	runA = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ2"
	runB = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ3"
)

type charge struct {
	ChargeID string `json:"chargeId"`
	Cents    int    `json:"cents"`
}

// sealedRun creates, through a wrapper with key k1, a completed run with a
// step and the output {"chargeId":"ch_1","cents":500}, and returns the
// store underneath and the keys.
func sealedRun(t *testing.T, runIDs ...string) (*tamperWorld, encrypt.Keyring) {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keys := keyring(t, "k1", map[string][]byte{"k1": key(1)})
	w, err := encrypt.Wrap(lw, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runIDs {
		appendAll(t, w, run, chargeEvents(`{"chargeId":"ch_1","cents":500}`)...)
	}
	return &tamperWorld{World: lw}, keys
}

// chargeEvents are the events of a completed run with two steps and
// output.
func chargeEvents(output string) []world.EventInput {
	return []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "charge", Input: json.RawMessage(`{"cents":500}`)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZA", Data: &world.StepCreated{StepName: "a", Input: json.RawMessage(`"in-a"`)}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZB", Data: &world.StepCreated{StepName: "b", Input: json.RawMessage(`"in-b"`)}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZA", Data: &world.StepStarted{}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZA", Data: &world.StepCompleted{Result: json.RawMessage(`"result-a"`)}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZB", Data: &world.StepStarted{}},
		{CorrelationID: "step_01JABCDEFGHJKMNPQRSTVWXYZB", Data: &world.StepCompleted{Result: json.RawMessage(`"result-b"`)}},
		{Data: &world.RunCompleted{Output: json.RawMessage(output)}},
	}
}

func appendAll(t *testing.T, w world.World, run string, evs ...world.EventInput) {
	t.Helper()
	for _, ev := range evs {
		if _, err := w.Append(context.Background(), &world.AppendParams{RunID: run, Events: []world.EventInput{ev}}); err != nil {
			t.Fatalf("append %T to %s: %v", ev.Data, run, err)
		}
	}
}

func reader(t *testing.T, inner world.World, keys encrypt.Keyring) world.World {
	t.Helper()
	w, err := encrypt.Wrap(inner, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// wantTampered fails unless err is the typed error of a damaged sealed
// payload: a *KeyError wrapping ErrTampered, which the engine treats as a
// key it lacks (world.ErrKeyUnavailable: the run waits, never runs on it).
func wantTampered(t *testing.T, what string, err error) {
	t.Helper()
	var ke *encrypt.KeyError
	if !errors.As(err, &ke) || !errors.Is(err, encrypt.ErrTampered) || !errors.Is(err, world.ErrKeyUnavailable) {
		t.Errorf("%s: err = %v, want a *KeyError wrapping ErrTampered", what, err)
	}
}

func flip(b []byte, bit int) []byte {
	c := append([]byte(nil), b...)
	c[bit/8] ^= 1 << (bit % 8)
	return c
}

// TestSealedBitFlipSweep: every single-bit flip of a sealed run's stored
// output, and of its stored input (the envelope holding the run's data
// key), read by a fresh process, is a typed error: none comes back as
// data. The figures go to RELIABILITY.md ("Tampering and corruption").
func TestSealedBitFlipSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA)
	orig, err := tw.World.GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"output", "input"} {
		stored := orig.Output
		if field == "input" {
			stored = orig.Input
		}
		tried, silent := 0, 0
		for bit := range len(stored) * 8 {
			bad := flip(stored, bit)
			tw.set(func(r *world.Run) {
				if field == "input" {
					r.Input = bad
				} else {
					r.Output = bad
				}
			}, nil, nil)
			tried++
			r, err := reader(t, tw, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
			if err == nil {
				silent++
				var c charge
				_ = json.Unmarshal(r.Output, &c)
				t.Errorf("%s bit %d: no error, output %s (%+v)", field, bit, r.Output, c)
				continue
			}
			if field == "output" {
				wantTampered(t, field, err)
			} else if !errors.As(err, new(*encrypt.KeyError)) || !errors.Is(err, world.ErrKeyUnavailable) {
				// A flip in the wrapped data key is a key that does not
				// open (ErrWrongKey); any other is ErrTampered.
				t.Errorf("input bit %d: err = %v, want a *KeyError", bit, err)
			}
		}
		t.Logf("sealed run %s: %d single-bit flips tried, %d silent", field, tried, silent)
		if tried < 8*100 {
			t.Errorf("%s: only %d flips: the stored envelope is shorter than expected", field, tried)
		}
	}
}

// TestSealedRunRefusesWhatIsNotItsEnvelope: in a sealed run, plaintext in
// place of an envelope, an envelope of another version, one that names no
// key or another key, and a missing output are typed errors, on every read
// (GetRun, the run_completed event).
func TestSealedRunRefusesWhatIsNotItsEnvelope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA)
	orig, err := tw.World.GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(orig.Output, &env); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) json.RawMessage {
		c := map[string]any{}
		for kk, vv := range env {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return b
	}
	for name, bad := range map[string]json.RawMessage{
		"plaintext":         json.RawMessage(`{"chargeId":"ch_evil","cents":1}`),
		"plaintext null":    json.RawMessage(`null`),
		"version 1":         with("skein.sealed", 1),
		"version 3":         with("skein.sealed", 3),
		"version 0":         with("skein.sealed", 0),
		"no version":        with("skein.sealed", nil),
		"empty key ID":      with("kid", ""),
		"other key ID":      with("kid", "k2"),
		"no ciphertext":     with("ct", nil),
		"missing":           nil,
		"run's own input":   orig.Input,
		"spaced":            append(append(json.RawMessage{' '}, orig.Output...), ' '),
		"extra member":      with("x", 1),
		"envelope in array": json.RawMessage(`[` + string(orig.Output) + `]`),
	} {
		tw.set(func(r *world.Run) { r.Output = bad }, nil, func(e *world.Event) {
			if d, ok := e.Data.(*world.RunCompleted); ok {
				c := *d
				c.Output = bad
				e.Data = &c
			}
		})
		r := reader(t, tw, keys)
		_, err := r.GetRun(ctx, &world.GetRunParams{RunID: runA})
		wantTampered(t, name+": GetRun", err)
		_, err = r.ListEvents(ctx, &world.ListEventsParams{RunID: runA})
		wantTampered(t, name+": ListEvents", err)
		_, err = r.ListRuns(ctx, &world.ListRunsParams{})
		wantTampered(t, name+": ListRuns", err)
	}
	// Untouched, it reads back.
	tw.set(nil, nil, nil)
	r, err := reader(t, tw, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil || string(r.Output) != `{"chargeId":"ch_1","cents":500}` {
		t.Fatalf("untouched: %s, %v", r.Output, err)
	}
}

// TestSealedRunStaysSealedWithoutItsInputTag: the run records that it is
// sealed on run_created (its execution context), so that plaintext in
// place of its input does not make it a run in clear.
func TestSealedRunStaysSealedWithoutItsInputTag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA)
	tw.set(func(r *world.Run) { r.Input = json.RawMessage(`{"cents":1}`) }, nil, nil)
	_, err := reader(t, tw, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
	wantTampered(t, "plaintext input", err)
	// The marker is the World's: a reader with the key does not see it.
	tw.set(nil, nil, nil)
	r, err := reader(t, tw, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil || len(r.ExecutionContext) != 0 {
		t.Fatalf("execution context %s, %v; want none", r.ExecutionContext, err)
	}
}
