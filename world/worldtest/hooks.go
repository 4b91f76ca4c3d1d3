package worldtest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

func hookCases() []testCase {
	return []testCase{
		{"create", testHookCreate},
		{"token_held_by_other_run_conflict_event", testHookTokenHeld},
		{"token_held_by_same_run_conflict_event", testHookTokenHeldSameRun},
		{"create_duplicate_conflict", testHookCreateDuplicate},
		{"create_on_finished_run_conflict", testHookCreateFinishedRun},
		{"create_invalid", testHookCreateInvalid},
		{"client_hook_conflict_invalid", testHookConflictByClient},
		{"received", testHookReceived},
		{"received_missing_not_found", testHookReceivedMissing},
		{"received_other_token_corrupt", testHookReceivedOtherToken},
		{"disposed_frees_token", testHookDisposed},
		{"dispose_then_create_same_token_one_commit", testHookDisposeThenCreate},
		{"run_end_disposes_hooks", testHookRunEnd},
	}
}

func testHookCreate(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	id := ids.New(world.PrefixHook)
	r := f.mustAppendOne(run, ev(id, &world.HookCreated{Token: tok, Metadata: json.RawMessage(`{"m":1}`), IsWebhook: true}))
	if r.Event == nil || r.Event.Type() != world.EventHookCreated {
		t.Fatalf("hook_created on a free token: got %s, want hook_created", eventType(r.Event))
	}
	if r.Hook == nil || r.Hook.HookID != id || r.Hook.Token != tok {
		t.Fatalf("hook_created: result hook %+v", r.Hook)
	}
	h, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id})
	if err != nil {
		t.Fatalf("GetHook: %v", err)
	}
	if h.HookID != id || h.RunID != run || h.Token != tok || !h.IsWebhook || !jsonEqual(h.Metadata, []byte(`{"m":1}`)) || h.CreatedAt.IsZero() {
		t.Fatalf("GetHook: got %+v", h)
	}
	h, err = f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil {
		t.Fatalf("GetHookByToken: %v", err)
	}
	if h.HookID != id || h.RunID != run {
		t.Fatalf("GetHookByToken: got %+v, want hook %s of run %s", h, id, run)
	}
}

func testHookTokenHeld(t *testing.T, f *fixture) {
	holder, other := f.startedRun(), f.startedRun()
	tok := token()
	held := f.mustCreateHook(holder, tok)
	id, r := f.createHook(other, tok)
	if r.Event == nil || r.Event.Type() != world.EventHookConflict {
		t.Fatalf("hook_created on a token held by another run: got %s, want hook_conflict", eventType(r.Event))
	}
	d, ok := r.Event.Data.(*world.HookConflict)
	if !ok || d.Token != tok || d.ConflictingRunID != holder {
		t.Fatalf("hook_conflict payload %+v, want token %q and conflicting run %s", r.Event.Data, tok, holder)
	}
	if r.Event.CorrelationID != id {
		t.Fatalf("hook_conflict correlation %q, want the proposed hook %s", r.Event.CorrelationID, id)
	}
	if r.Hook != nil {
		t.Fatalf("hook_conflict: result has a hook %+v, want none", r.Hook)
	}
	_, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id})
	wantErr(t, err, world.ErrNotFound, "GetHook of the conflicted hook")
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != held || h.RunID != holder {
		t.Fatalf("GetHookByToken after a conflict: %+v, %v; want the holder's hook %s", h, err, held)
	}
	evs := f.events(other)
	if count(evs, world.EventHookConflict, id) != 1 || count(evs, world.EventHookCreated, "") != 0 {
		t.Fatalf("the conflicted run's log should hold one hook_conflict and no hook_created")
	}
	stored, _ := evs[len(evs)-1].Data.(*world.HookConflict)
	if stored == nil || stored.ConflictingRunID != holder || stored.Token != tok {
		t.Fatalf("hook_conflict as stored: %+v", evs[len(evs)-1].Data)
	}
	// The conflicted hook does not exist: it cannot receive or be disposed.
	_, err = f.append(other, ev(id, &world.HookReceived{Payload: json.RawMessage(`1`)}))
	wantErr(t, err, world.ErrNotFound, "hook_received on a conflicted hook")
	_, err = f.append(other, ev(id, &world.HookDisposed{}))
	wantErr(t, err, world.ErrNotFound, "hook_disposed on a conflicted hook")
	if hs := f.listHooks(other); len(hs) != 0 {
		t.Fatalf("ListHooks of the conflicted run: %d hooks, want 0", len(hs))
	}
}

func testHookTokenHeldSameRun(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	f.mustCreateHook(run, tok)
	_, r := f.createHook(run, tok)
	d, ok := r.Event.Data.(*world.HookConflict)
	if !ok || d.ConflictingRunID != run {
		t.Fatalf("a second hook of the same run on one token: got %s %+v, want hook_conflict naming the run itself", eventType(r.Event), r.Event.Data)
	}
}

func testHookCreateDuplicate(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	id := f.mustCreateHook(run, tok)
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.HookCreated{Token: tok}))
	wantErr(t, err, world.ErrConflict, "hook_created again with the same hook ID and token")
	_, err = f.append(run, ev(id, &world.HookCreated{Token: token()}))
	wantErr(t, err, world.ErrConflict, "hook_created again with the same hook ID and another token")
	f.wantLogUnchanged(run, before, "duplicate hook_created")
}

func testHookCreateFinishedRun(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		f.endRun(run, how)
		tok := token()
		_, err := f.append(run, ev(ids.New(world.PrefixHook), &world.HookCreated{Token: tok}))
		wantErr(t, err, world.ErrConflict, "hook_created on a run ended by %s", how)
		_, err = f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
		wantErr(t, err, world.ErrNotFound, "GetHookByToken of a refused hook")
	}
}

func testHookCreateInvalid(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, tc := range []struct {
		name string
		in   world.EventInput
	}{
		{"no token", ev(ids.New(world.PrefixHook), &world.HookCreated{})},
		{"a token over MaxTokenLength", ev(ids.New(world.PrefixHook), &world.HookCreated{Token: strings.Repeat("t", world.MaxTokenLength+1)})},
		{"a step correlation ID", ev(ids.New(world.PrefixStep), &world.HookCreated{Token: token()})},
		{"invalid JSON metadata", ev(ids.New(world.PrefixHook), &world.HookCreated{Token: token(), Metadata: json.RawMessage(`{`)})},
		{"invalid JSON payload", ev(ids.New(world.PrefixHook), &world.HookReceived{Payload: json.RawMessage(`]`)})},
	} {
		before := f.events(run)
		_, err := f.append(run, tc.in)
		wantErr(t, err, world.ErrInvalid, "hook event with %s", tc.name)
		f.wantLogUnchanged(run, before, tc.name)
	}
}

func testHookConflictByClient(t *testing.T, f *fixture) {
	run := f.startedRun()
	before := f.events(run)
	_, err := f.append(run, ev(ids.New(world.PrefixHook), &world.HookConflict{Token: token(), ConflictingRunID: run}))
	wantErr(t, err, world.ErrInvalid, "a client-written hook_conflict")
	f.wantLogUnchanged(run, before, "client-written hook_conflict")
}

func testHookReceived(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	id := f.mustCreateHook(run, tok)
	for i, payload := range []string{`{"n":1}`, `{"n":2}`} {
		r := f.mustAppendOne(run, ev(id, &world.HookReceived{Payload: json.RawMessage(payload)}))
		if r.Event == nil || r.Event.Type() != world.EventHookReceived {
			t.Fatalf("hook_received #%d: got %s", i+1, eventType(r.Event))
		}
		d, _ := r.Event.Data.(*world.HookReceived)
		if d == nil || d.Token != tok || !jsonEqual(d.Payload, []byte(payload)) {
			t.Fatalf("hook_received #%d: payload %+v, want token %q and %s", i+1, r.Event.Data, tok, payload)
		}
		if r.Hook == nil || r.Hook.HookID != id {
			t.Fatalf("hook_received #%d: result hook %+v, want the active hook %s", i+1, r.Hook, id)
		}
	}
	evs := f.events(run)
	if n := count(evs, world.EventHookReceived, id); n != 2 {
		t.Fatalf("log has %d hook_received, want 2", n)
	}
	d, _ := evs[len(evs)-1].Data.(*world.HookReceived)
	if d == nil || d.Token != tok || !jsonEqual(d.Payload, []byte(`{"n":2}`)) {
		t.Fatalf("hook_received as stored: %+v, want the token and the payload", evs[len(evs)-1].Data)
	}
	if _, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id}); err != nil {
		t.Fatalf("a hook that received payloads must stay active: GetHook: %v", err)
	}
}

func testHookReceivedMissing(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.append(run, ev(ids.New(world.PrefixHook), &world.HookReceived{Payload: json.RawMessage(`1`)}))
	wantErr(t, err, world.ErrNotFound, "hook_received on a hook never created")
	// A hook of another run is not this run's hook.
	other := f.startedRun()
	id := f.mustCreateHook(other, token())
	_, err = f.append(run, ev(id, &world.HookReceived{Payload: json.RawMessage(`1`)}))
	wantErr(t, err, world.ErrNotFound, "hook_received naming another run's hook")
}

func testHookDisposed(t *testing.T, f *fixture) {
	run, next := f.startedRun(), f.startedRun()
	tok := token()
	id := f.mustCreateHook(run, tok)
	r := f.mustAppendOne(run, ev(id, &world.HookDisposed{}))
	if r.Event == nil || r.Event.Type() != world.EventHookDisposed {
		t.Fatalf("hook_disposed: got %s", eventType(r.Event))
	}
	if d, _ := r.Event.Data.(*world.HookDisposed); d == nil || d.Token != tok {
		t.Fatalf("hook_disposed payload %+v, want the disposed token %q", r.Event.Data, tok)
	}
	_, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id})
	wantErr(t, err, world.ErrNotFound, "GetHook after hook_disposed")
	_, err = f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	wantErr(t, err, world.ErrNotFound, "GetHookByToken after hook_disposed")
	before := f.events(run)
	_, err = f.append(run, ev(id, &world.HookDisposed{}))
	wantErr(t, err, world.ErrNotFound, "hook_disposed twice")
	_, err = f.append(run, ev(id, &world.HookReceived{}))
	wantErr(t, err, world.ErrNotFound, "hook_received after hook_disposed")
	f.wantLogUnchanged(run, before, "writes to a disposed hook")
	// The token is free for another run.
	newID := f.mustCreateHook(next, tok)
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != newID || h.RunID != next {
		t.Fatalf("GetHookByToken after the token was reclaimed: %+v, %v; want hook %s of run %s", h, err, newID, next)
	}
}

// testHookDisposeThenCreate: a run disposes of a hook committed earlier
// (and resumed) and creates a new one on the same token in one Append, as
// the engine commits a workflow that receives, disposes and asks for the
// next hook: the new hook holds the token, no conflict.
func testHookDisposeThenCreate(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	old := f.mustCreateHook(run, tok)
	f.mustAppendOne(run, ev(old, &world.HookReceived{Payload: json.RawMessage(`1`)}))
	next := ids.New(world.PrefixHook)
	res := f.mustAppend(run, ev(old, &world.HookDisposed{}), ev(next, &world.HookCreated{Token: tok}))
	if e := res.Results[1].Event; e == nil || e.Type() != world.EventHookCreated {
		t.Fatalf("hook_created after hook_disposed of the token's holder in the same commit: got %s, want hook_created", eventType(e))
	}
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != next || h.RunID != run {
		t.Fatalf("GetHookByToken after dispose and create: %+v, %v; want hook %s", h, err, next)
	}
	_, err = f.w.GetHook(f.ctx, &world.GetHookParams{HookID: old})
	wantErr(t, err, world.ErrNotFound, "GetHook of the disposed hook")
	if hs := f.listHooks(run); len(hs) != 1 || hs[0].HookID != next {
		t.Fatalf("ListHooks after dispose and create: %+v, want only %s", hs, next)
	}
	// And again: the new hook is disposed and the token taken a third time.
	third := ids.New(world.PrefixHook)
	res = f.mustAppend(run, ev(next, &world.HookDisposed{}), ev(third, &world.HookCreated{Token: tok}))
	if e := res.Results[1].Event; e == nil || e.Type() != world.EventHookCreated {
		t.Fatalf("third hook on the token: got %s, want hook_created", eventType(e))
	}
}

func testHookRunEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run, next := f.startedRun(), f.startedRun()
		tok1, tok2 := token(), token()
		h1, h2 := f.mustCreateHook(run, tok1), f.mustCreateHook(run, tok2)
		keep := f.mustCreateHook(next, token())
		f.endRun(run, how)
		for _, id := range []string{h1, h2} {
			_, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id})
			wantErr(t, err, world.ErrNotFound, "GetHook of a hook of a run ended by %s", how)
			_, err = f.append(run, ev(id, &world.HookReceived{Payload: json.RawMessage(`1`)}))
			if !errors.Is(err, world.ErrNotFound) && !errors.Is(err, world.ErrGone) {
				t.Fatalf("hook_received on a hook of a run ended by %s: %v, want 404 or 410", how, err)
			}
		}
		_, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok1})
		wantErr(t, err, world.ErrNotFound, "GetHookByToken of a hook of a run ended by %s", how)
		if hs := f.listHooks(run); len(hs) != 0 {
			t.Fatalf("ListHooks of a run ended by %s: %d hooks, want 0", how, len(hs))
		}
		if _, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: keep}); err != nil {
			t.Fatalf("ending one run disposed another run's hook: %v", err)
		}
		// Both tokens are reusable by another run.
		f.mustCreateHook(next, tok1)
		f.mustCreateHook(next, tok2)
		if evs := f.events(run); evs[len(evs)-1].Type() != how {
			t.Fatalf("ending a run by %s: the log ends with %s; disposal on run end writes no event", how, evs[len(evs)-1].Type())
		}
	}
}

// listHooks lists the active hooks of a run (all runs when empty).
func (f *fixture) listHooks(run string) []world.Hook {
	f.t.Helper()
	var all []world.Hook
	cursor := ""
	for range 1000 {
		p, err := f.w.ListHooks(f.ctx, &world.ListHooksParams{RunID: run, Pagination: world.Pagination{Limit: 100, Cursor: cursor}})
		if err != nil {
			f.t.Fatalf("ListHooks(%q): %v", run, err)
		}
		all = append(all, p.Items...)
		if len(p.Items) == 0 || !p.HasMore {
			return all
		}
		cursor = p.Cursor
	}
	f.t.Fatalf("ListHooks(%q): too many pages", run)
	return nil
}

// testHookReceivedOtherToken: a hook_received that names the token its
// caller found the hook by (a token index) is refused with ErrCorrupt when
// the hook holds another token, and nothing is recorded: the index named
// the wrong hook (the trial edited a DynamoDB token item to point at
// another run's hook, and the payload was recorded there).
func testHookReceivedOtherToken(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok, other := token(), token()
	id := f.mustCreateHook(run, tok)
	before := len(f.events(run))
	_, err := f.append(run, ev(id, &world.HookReceived{Token: other, Payload: json.RawMessage(`1`)}))
	wantErr(t, err, world.ErrCorrupt, "hook_received by another token")
	if n := len(f.events(run)); n != before {
		t.Fatalf("the refused hook_received changed the log: %d events, want %d", n, before)
	}
	r := f.mustAppendOne(run, ev(id, &world.HookReceived{Token: tok, Payload: json.RawMessage(`2`)}))
	if d, _ := r.Event.Data.(*world.HookReceived); d == nil || d.Token != tok {
		t.Fatalf("hook_received by its own token: %+v", r.Event.Data)
	}
}
