package worldtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// Limits: a World reports the limits it enforces (a Limits() world.Limits
// method, which the engine reads) and world.Apply refuses, with a
// *world.LimitError, a payload larger than MaxPayload and any event but a
// run's end (or hold) once the run has MaxEvents, leaving the run as it
// was; WriteStream refuses a write that would take its stream past
// MaxStreamBytes, writing nothing of it, however many writers (processes)
// share the stream; an event whose payloads would take the run's stored
// payload bytes past MaxRunBytes is refused, leaving the run as it was,
// except the ones that end or hold it and, once the run has ended, what
// its rest records (a step's outcome only within world.LateOutcomeSlack);
// Run.PayloadBytes counts each
// payload as stored (compact JSON, encoding/json's escapes), the same on
// every read path and in a fold of the log read back. The suite reaches the limits: New
// must configure small ones (MaxEvents 1,000 to 2,000, MaxPayload and
// MaxStreamBytes 64 KiB to 1 MiB, MaxRunBytes 16 MaxPayload to 8 MiB,
// MaxStreams 4 to 64: other cases append a few hundred events and
// payloads of 16 KiB, and write a few streams of a few KiB). The bound on
// a run's streams is in limits_streams.go.
func limitCases() []testCase {
	return []testCase{
		{"payload_refused_run_unchanged", testLimitPayload},
		{"events_refused_end_accepted", testLimitEvents},
		{"run_bytes_refused_end_accepted", testLimitRunBytes},
		{"run_bytes_as_stored", testRunBytesAsStored},
		{"run_bytes_late_outcome", testLimitRunBytesLate},
		{"stream_bytes_refused", testLimitStreamBytes},
		{"stream_bytes_concurrent_writers", testLimitStreamBytesRace},
		{"streams_refused", testLimitStreams},
		{"streams_concurrent_writers", testLimitStreamsRace},
	}
}

// maxSuiteEvents is the largest MaxEvents the suite appends up to, and
// maxSuiteRunBytes the largest MaxRunBytes.
const (
	maxSuiteEvents   = 2000
	maxSuiteRunBytes = 8 << 20
)

// limits returns the limits the World reports, failing the case when it
// reports none or ones too large for the suite to reach.
func (f *fixture) limits() world.Limits {
	f.t.Helper()
	lw, ok := f.w.(interface{ Limits() world.Limits })
	if !ok {
		f.t.Fatal("worldtest: the World does not report its limits (a Limits() world.Limits method)")
	}
	l := lw.Limits()
	if l.MaxEvents < 1000 || l.MaxEvents > maxSuiteEvents || l.MaxPayload < 64<<10 || l.MaxPayload > 1<<20 ||
		l.MaxStreamBytes < 64<<10 || l.MaxStreamBytes > 1<<20 || l.MaxRunBytes < 16*int64(l.MaxPayload) || l.MaxRunBytes > maxSuiteRunBytes ||
		l.MaxStreams < 4 || l.MaxStreams > 64 {
		f.t.Fatalf("worldtest: configure the World under test with small limits (MaxEvents 1000..%d, MaxPayload and MaxStreamBytes 64 KiB..1 MiB, MaxRunBytes 16 MaxPayload..%d, MaxStreams 4..64), not %+v",
			maxSuiteEvents, maxSuiteRunBytes, l)
	}
	return l
}

// wantLimit fails unless err is a *world.LimitError of limit, matching
// world.ErrLimitExceeded.
func wantLimit(t *testing.T, err error, limit, what string) *world.LimitError {
	t.Helper()
	wantErr(t, err, world.ErrLimitExceeded, "%s", what)
	var le *world.LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("%s: got %v, want a *world.LimitError of limit %q", what, err, limit)
	}
	if world.Status(err) != 413 {
		t.Fatalf("%s: Status = %d, want 413", what, world.Status(err))
	}
	return le
}

// jsonOfSize is a JSON string of exactly n bytes (n >= 2).
func jsonOfSize(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func testLimitPayload(t *testing.T, f *fixture) {
	l := f.limits()
	_, err := f.append(ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: jsonOfSize(l.MaxPayload + 1)}))
	le := wantLimit(t, err, "payload", "run_created with an input of MaxPayload+1 bytes")
	// A World that seals payloads (encrypt) judges them sealed: larger.
	if le.Max != int64(l.MaxPayload) || le.Size <= le.Max {
		t.Fatalf("LimitError Max %d Size %d, want Max %d and Size above it", le.Max, le.Size, l.MaxPayload)
	}
	id := ids.New(world.PrefixRun)
	half := l.MaxPayload / 2 // accepted, even sealed
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: jsonOfSize(half)}))
	f.mustAppend(id, ev("", &world.RunStarted{}))
	hook := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(hook, &world.HookCreated{Token: "tok-" + hook}))
	step := f.createStep(id)
	f.startStep(id, step, 0)
	before := f.getRun(id)
	for _, in := range []world.EventInput{
		ev(hook, &world.HookReceived{Payload: jsonOfSize(l.MaxPayload + 1)}),
		ev(step, &world.StepCompleted{Result: jsonOfSize(l.MaxPayload + 1)}),
		ev(step, &world.StepFailed{Error: &world.ErrorData{Message: strings.Repeat("e", l.MaxPayload+1)}}),
		ev("", &world.RunCompleted{Output: jsonOfSize(l.MaxPayload + 1)}),
	} {
		_, err := f.append(id, in)
		wantLimit(t, err, "payload", describe([]world.EventInput{in})+" over MaxPayload")
		f.wantUnchanged(id, before, describe([]world.EventInput{in})+" refused")
	}
	f.mustAppend(id, ev(hook, &world.HookReceived{Payload: jsonOfSize(half)}))
}

func testLimitEvents(t *testing.T, f *fixture) {
	l := f.limits()
	id := f.startedRun() // two events
	var evs []world.EventInput
	for range l.MaxEvents - 2 {
		evs = append(evs, ev("", attrSet("k", "v")))
	}
	for len(evs) > 0 {
		n := min(len(evs), 25) // within every World's commit size
		f.mustAppend(id, evs[:n]...)
		evs = evs[n:]
	}
	before := f.getRun(id)
	if before.LastSeq != l.MaxEvents {
		t.Fatalf("LastSeq %d, want MaxEvents %d", before.LastSeq, l.MaxEvents)
	}
	hook := ids.New(world.PrefixHook)
	for _, in := range []world.EventInput{
		ev("", attrSet("k", "w")),
		ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s"}),
		ev(hook, &world.HookCreated{Token: "tok-" + hook}),
	} {
		_, err := f.append(id, in)
		le := wantLimit(t, err, "events", describe([]world.EventInput{in})+" on a run at MaxEvents")
		if le.Max != l.MaxEvents {
			t.Fatalf("LimitError Max %d, want %d", le.Max, l.MaxEvents)
		}
		f.wantUnchanged(id, before, describe([]world.EventInput{in})+" refused")
	}
	f.mustAppend(id, ev("", &world.RunFailed{Error: &world.ErrorData{Message: "too long"}, ErrorCode: world.CodeMaxEventsExceeded}))
	if r := f.getRun(id); r.Status != world.RunStatusFailed || r.ErrorCode != world.CodeMaxEventsExceeded {
		t.Fatalf("run after run_failed: status %s code %q", r.Status, r.ErrorCode)
	}
	_, err := f.append(id, ev("", attrSet("k", "w")))
	wantLimit(t, err, "events", "attribute_set on a finished run past MaxEvents")
	f.mustAppend(id, ev("", &world.RunDeactivated{}))
}

// A token holder's flood (hook_received after hook_received) stops at
// MaxRunBytes: the delivery that would pass it is refused with a
// *world.LimitError of "run bytes" and leaves the run as it was (nothing
// already stored is lost); an event with no payload still fits, and the
// run can still be failed and come to rest.
func testLimitRunBytes(t *testing.T, f *fixture) {
	l := f.limits()
	id := f.startedRun()
	hook := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(hook, &world.HookCreated{Token: "tok-" + hook}))
	half := l.MaxPayload / 2 // within MaxPayload, even sealed
	var le *world.LimitError
	accepted := int64(0)
	for i := int64(0); le == nil; i++ {
		if i > 2*l.MaxRunBytes/int64(half)+2 {
			t.Fatalf("%d deliveries of %d bytes accepted, past MaxRunBytes %d: none refused", i, half, l.MaxRunBytes)
		}
		before := f.getRun(id)
		_, err := f.append(id, ev(hook, &world.HookReceived{Payload: jsonOfSize(half)}))
		if err == nil {
			accepted++
			continue
		}
		le = wantLimit(t, err, "run bytes", "a delivery past MaxRunBytes")
		f.wantUnchanged(id, before, "the delivery refused")
		if le.Max != l.MaxRunBytes || le.Size <= le.Max || le.RunID != id || before.PayloadBytes > l.MaxRunBytes || le.Size-before.PayloadBytes < int64(half) {
			t.Fatalf("LimitError %+v with the run at %d payload bytes: want run %s, Max %d, Size above it by the delivery's %d bytes or more",
				le, before.PayloadBytes, id, l.MaxRunBytes, half)
		}
	}
	// A World that seals payloads stores each larger: fewer fit, but at
	// least half of MaxRunBytes of what was sent.
	if sent := accepted * int64(half); sent > l.MaxRunBytes || sent < l.MaxRunBytes/2 {
		t.Fatalf("%d deliveries of %d bytes accepted (%d bytes), want between MaxRunBytes/2 and MaxRunBytes %d", accepted, half, sent, l.MaxRunBytes)
	}
	f.mustAppend(id, ev("", attrSet("k", "v")))
	if evs := f.events(id); int64(count(evs, world.EventHookReceived, hook)) != accepted {
		t.Fatalf("the log holds %d hook_received, want the %d accepted", count(evs, world.EventHookReceived, hook), accepted)
	}
	f.mustAppend(id, ev("", &world.RunFailed{Error: &world.ErrorData{Message: "full"}, ErrorCode: world.CodeLimitExceeded}))
	f.mustAppend(id, ev("", &world.RunDeactivated{}))
}

// streamWrite writes chunks of the given sizes to a stream.
func (f *fixture) streamWrite(run, name string, sizes ...int64) error {
	var cs [][]byte
	for _, n := range sizes {
		cs = append(cs, bytes.Repeat([]byte{'s'}, int(n)))
	}
	return f.w.WriteStream(f.ctx, &world.WriteStreamParams{RunID: run, Name: name, Chunks: cs})
}

// A write that would take a stream past MaxStreamBytes is refused with a
// *world.LimitError and writes nothing; what was refused does not count,
// and each stream of a run has a bound of its own. Sizes leave room for a
// World that seals chunks (encrypt: each a little larger).
func testLimitStreamBytes(t *testing.T, f *fixture) {
	l := f.limits()
	run := f.startedRun()
	// Sealed by a World that encrypts (base64 in JSON), a chunk grows by a
	// third: 3/8 and 1/4 still fit together.
	first, half, quarter := 3*l.MaxStreamBytes/8, l.MaxStreamBytes/2, l.MaxStreamBytes/4
	if err := f.streamWrite(run, "big", first); err != nil {
		t.Fatalf("a write of 3/8 MaxStreamBytes: %v", err)
	}
	err := f.streamWrite(run, "big", quarter, half)
	le := wantLimit(t, err, "stream bytes", "a write taking the stream to 9/8 MaxStreamBytes")
	if le.Max != l.MaxStreamBytes || le.Size <= le.Max || le.RunID != run {
		t.Fatalf("LimitError %+v, want run %s, Max %d and Size above it", le, run, l.MaxStreamBytes)
	}
	if info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "big"}); err != nil || info.TailIndex != 0 {
		t.Fatalf("StreamInfo after the refused write: %+v, %v; want the first chunk only (tail index 0)", info, err)
	}
	if err := f.streamWrite(run, "big", quarter); err != nil {
		t.Fatalf("a write of a quarter after a refused one (refused bytes must not count): %v", err)
	}
	if err := f.streamWrite(run, "other", half); err != nil {
		t.Fatalf("a write of half MaxStreamBytes to another stream of the run: %v", err)
	}
	f.closeStream(run, "big")
	all, done := f.readAllChunks(run, "big")
	if !done || len(all) != 2 || int64(len(all[0].Data)) != first || int64(len(all[1].Data)) != quarter {
		t.Fatalf("the stream holds %d chunks (done %v), want the 3/8 and the quarter written", len(all), done)
	}
}

// Writers racing to fill one stream (on two processes' Worlds, where the
// Subject is such a pair) together never take it past MaxStreamBytes: the
// count is the stream's, not a writer's. Every write is accepted whole or
// refused with a *world.LimitError.
func testLimitStreamBytesRace(t *testing.T, f *fixture) {
	l := f.limits()
	run := f.startedRun()
	size := l.MaxStreamBytes / 8
	n := max(f.o.Racers, 16) // 2 MaxStreamBytes in all
	errs := race(n, func(int) error { return f.streamWrite(run, "filled", size) })
	accepted := 0
	for i, err := range errs {
		var le *world.LimitError
		switch {
		case err == nil:
			accepted++
		case !errors.As(err, &le) || le.Limit != "stream bytes":
			t.Fatalf("writer %d: %v, want nil or a *world.LimitError of %q", i, err, "stream bytes")
		}
	}
	all, _ := f.readAllChunks(run, "filled")
	var total int64
	for _, c := range all {
		total += int64(len(c.Data))
	}
	if len(all) != accepted || total > l.MaxStreamBytes || accepted == 0 || accepted == n {
		t.Fatalf("%d of %d writes of %d bytes accepted, the stream holds %d chunks, %d bytes; want the accepted ones only, within MaxStreamBytes %d",
			accepted, n, size, len(all), total, l.MaxStreamBytes)
	}
}
