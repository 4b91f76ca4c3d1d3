package encrypt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, encrypt.DataKeySize) }

func keyring(t testing.TB, current string, keys map[string][]byte) encrypt.Keyring {
	t.Helper()
	k, err := encrypt.NewLocalKeys(current, keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestConformance: the wrapper is a World like any other; the suite's
// payloads travel sealed underneath.
func TestConformance(t *testing.T) {
	t.Parallel()
	worldtest.Run(t, worldtest.Options{New: func(t *testing.T) worldtest.Subject {
		clock := new(worldtest.Clock)
		lw, err := localworld.Open(localworld.Config{Limits: world.Limits{MaxEvents: 1000, MaxPayload: 64 << 10, MaxStreamBytes: 256 << 10, MaxStreams: 16, MaxRunBytes: 4 << 20}}, knobs.WithNow(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		w, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
		if err != nil {
			t.Fatal(err)
		}
		return worldtest.Subject{World: w, Consumer: w.(world.Consumer), Clock: clock}
	}, Sealed: true})
}

func TestLocalKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ring := keyring(t, "k2", map[string][]byte{"k1": key(1), "k2": key(2)})
	plain, wrapped, id, err := ring.NewDataKey(ctx)
	if err != nil || id != "k2" || len(plain) != encrypt.DataKeySize || bytes.Contains(wrapped, plain) {
		t.Fatalf("NewDataKey = %d bytes, key %q, %v", len(plain), id, err)
	}
	got, err := ring.OpenDataKey(ctx, "k2", wrapped)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("OpenDataKey = %v", err)
	}
	for _, tc := range []struct {
		name string
		ring encrypt.Keyring
		id   string
	}{
		{"unknown key", keyring(t, "k1", map[string][]byte{"k1": key(1)}), "k2"},
		{"wrong key under the same ID", keyring(t, "k2", map[string][]byte{"k2": key(9)}), "k2"},
		{"another key's ID", ring, "k1"},
	} {
		_, err := tc.ring.OpenDataKey(ctx, tc.id, wrapped)
		var ke *encrypt.KeyError
		if !errors.As(err, &ke) || ke.KeyID != tc.id || !errors.Is(err, world.ErrKeyUnavailable) {
			t.Errorf("%s: OpenDataKey = %v; want a *KeyError naming %q", tc.name, err, tc.id)
		}
	}
	for _, bad := range []struct {
		current string
		keys    map[string][]byte
	}{
		{"k9", map[string][]byte{"k1": key(1)}},
		{"k1", map[string][]byte{"k1": []byte("short")}},
		{"", map[string][]byte{"": key(1)}},
	} {
		if _, err := encrypt.NewLocalKeys(bad.current, bad.keys); err == nil {
			t.Errorf("NewLocalKeys(%q, ...) accepted", bad.current)
		}
	}
}

func TestParseLocalKeys(t *testing.T) {
	t.Parallel()
	b64 := func(b byte) string { return base64.StdEncoding.EncodeToString(key(b)) }
	ring, err := encrypt.ParseLocalKeys("k2=" + b64(2) + ", k1=" + b64(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, id, err := ring.NewDataKey(context.Background()); err != nil || id != "k2" {
		t.Errorf("current key %q, %v; want the first, k2", id, err)
	}
	for _, bad := range []string{"", "k1", "=" + b64(1), "k1=short", "k1=" + b64(1) + ",k1=" + b64(2)} {
		_, err := encrypt.ParseLocalKeys(bad)
		if err == nil {
			t.Errorf("ParseLocalKeys(%q) accepted", bad)
		} else if strings.Contains(err.Error(), b64(1)) {
			t.Errorf("the error shows a key: %v", err)
		}
	}
}

// TestLeaveSealed: a tool's reader without the key gets the payloads as
// stored, which Describe names by key, instead of an error.
func TestLeaveSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	writer, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	if _, err := writer.Append(ctx, &world.AppendParams{RunID: "wrun_01JABCDEFGHJKMNPQRSTVWXYZ0", Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"card 4242"`)}}}}); err != nil {
		t.Fatal(err)
	}
	reader, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k9", map[string][]byte{"k9": key(9)}), LeaveSealed: true})
	r, err := reader.GetRun(ctx, &world.GetRunParams{RunID: "wrun_01JABCDEFGHJKMNPQRSTVWXYZ0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := encrypt.Describe(r.Input); !strings.Contains(got, `key "k1"`) || strings.Contains(got, "4242") {
		t.Errorf("Describe = %q", got)
	}
}

// TestWatchOpensEvents: a watch through the wrapper (the wrapped World's
// own, pushed watcher) yields events with their payloads opened.
func TestWatchOpensEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	w, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	const run = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ1"
	if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"card 4242"`)}}}}); err != nil {
		t.Fatal(err)
	}
	for we, err := range w.(world.Watcher).Watch(ctx, &world.WatchParams{RunID: run}) {
		if err != nil {
			t.Fatal(err)
		}
		d, ok := we.Event.Data.(*world.RunCreated)
		if !ok || string(d.Input) != `"card 4242"` {
			t.Fatalf("watched %s with input %s; want run_created opened", we.Event.Type(), d.Input)
		}
		break
	}
}

// TestListingToleratesUnreadableRuns: after a key is retired from the
// keyring, listing runs still works: the runs it cannot open are listed
// sealed, while GetRun of one is the *KeyError naming its key.
func TestListingToleratesUnreadableRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	old, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	cur, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k2", map[string][]byte{"k2": key(2)})})
	const r1, r2 = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ2", "wrun_01JABCDEFGHJKMNPQRSTVWXYZ3"
	for _, c := range []struct {
		w  world.World
		id string
	}{{old, r1}, {cur, r2}} {
		if _, err := c.w.Append(ctx, &world.AppendParams{RunID: c.id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"x"`)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cur.ListRuns(ctx, &world.ListRunsParams{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("ListRuns = %v, %v; want both runs", page, err)
	}
	for _, r := range page.Items {
		if sealed := encrypt.IsSealed(r.Input); sealed != (r.RunID == r1) {
			t.Errorf("run %s listed with input %s", r.RunID, r.Input)
		}
	}
	if _, err := cur.GetRun(ctx, &world.GetRunParams{RunID: r1}); !errors.Is(err, world.ErrKeyUnavailable) {
		t.Errorf("GetRun of the k1 run = %v; want a KeyError", err)
	}
}

// TestCompensationPassesThrough: the comp_* events carry no payload, so
// the wrapper stores them as they come and returns them as stored; a
// step's compensation (a name and its progress) reads back through it
// beside the step's opened input and result.
func TestCompensationPassesThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	w, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	const run, step = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ2", "step_01JABCDEFGHJKMNPQRSTVWXYZ2"
	fail := &world.ErrorData{Type: "RefundError", Message: "card closed"}
	evs := []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"card 4242"`)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: step, Data: &world.StepCreated{StepName: "charge", Compensation: "refund", Input: json.RawMessage(`"card 4242"`)}},
		{CorrelationID: step, Data: &world.StepStarted{}},
		{CorrelationID: step, Data: &world.StepCompleted{Result: json.RawMessage(`"charged 4242"`)}},
		{Data: &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, Compensate: true}},
		{CorrelationID: step, Data: &world.CompStarted{LeaseTTL: time.Minute}},
		{CorrelationID: step, Data: &world.CompRetryScheduled{Error: fail}},
		{CorrelationID: step, Data: &world.CompStarted{}},
		{CorrelationID: step, Data: &world.CompFailed{Error: fail}},
	}
	res, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Run; !r.Compensate || r.Compensations != (world.Compensations{Failed: 1}) {
		t.Fatalf("Append's run: compensate %v counts %+v", r.Compensate, r.Compensations)
	}
	for _, reader := range []world.World{w, lw} {
		st, err := reader.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: step})
		if err != nil {
			t.Fatal(err)
		}
		if c := st.Compensation; st.Status != world.StepStatusCompensationFailed || c == nil || c.Step != "refund" || c.Attempt != 2 || c.Error == nil || c.Error.Message != "card closed" {
			t.Fatalf("GetStep: %s compensation %+v", st.Status, st.Compensation)
		}
		if sealed := reader == world.World(lw); sealed == (string(st.Output) == `"charged 4242"`) {
			t.Fatalf("GetStep (sealed underneath: %v): output %s", sealed, st.Output)
		}
	}
	under, err := lw.ListEvents(ctx, &world.ListEventsParams{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	over, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range under.Items {
		if !strings.HasPrefix(string(ev.Type()), "comp_") {
			continue
		}
		a, _ := json.Marshal(ev)
		b, _ := json.Marshal(over.Items[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("%s stored as %s, read through the wrapper as %s", ev.Type(), a, b)
		}
	}
	if d, ok := under.Items[2].Data.(*world.StepCreated); !ok || d.Compensation != "refund" || strings.Contains(string(d.Input), "4242") {
		t.Fatalf("step_created as stored: %+v", under.Items[2].Data)
	}
}
