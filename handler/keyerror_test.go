package handler_test

import (
	"bytes"
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/world"
)

// TestSQSWrongKeyIsNotAFailure: a flow function whose key k1 holds other
// bytes than the ones that sealed a run receives the run's message far
// past MaxDeliveries. The record must not be reported in batchItemFailures
// (SQS would count it toward the dead-letter queue) nor fail the run: the
// message goes back to the queue as a new one, the log names the run and
// the key at ERROR, and a function with the right key then ends the run.
func TestSQSWrongKeyIsNotAFailure(t *testing.T) {
	t.Parallel()
	seal := func(b byte) func(world.World) world.World {
		return func(w world.World) world.World {
			keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{b}, encrypt.DataKeySize)})
			if err != nil {
				t.Fatal(err)
			}
			ew, err := encrypt.Wrap(w, encrypt.Config{Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			return ew
		}
	}
	good, bad := seal(1), seal(2)
	b := setup(t, setupOptions{
		wrap:  func(w world.World) world.World { return bad(w) },
		knobs: []knobs.Option{knobs.WithVersionRetry(10*time.Millisecond, 20*time.Millisecond)},
	})
	gw := good(b.w)
	client, err := client.New(client.Config{World: gw, Registry: b.reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := serial.Start(ctx, client, 2)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := lambdaCtx(t, "req-wrong-key", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("m1", messageBody(t, world.Message{RunID: run.ID()}), 1000),
	}})
	if got := failedIDs(resp); len(got) != 0 {
		t.Fatalf("batchItemFailures %v, want none: a wrong key is not the message's failure", got)
	}
	if st, err := statusOf(ctx, run); err != nil || st.Terminal() {
		t.Fatalf("run status %s (%v), want it still running", st, err)
	}
	var queued []world.Message
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !refused(queued, run.ID()); {
		time.Sleep(10 * time.Millisecond)
		queued = b.queued(t)
	}
	if !refused(queued, run.ID()) {
		t.Fatalf("no message of run %s sent back with Refused 1: %+v", run.ID(), queued)
	}
	var logged bool
	for _, l := range b.logs.lines(t) {
		logged = logged || (l["level"] == "ERROR" && l["run"] == run.ID() && l["keyId"] == "k1")
	}
	if !logged {
		t.Fatalf("no ERROR line naming run %s and keyId k1 in %v", run.ID(), b.logs.lines(t))
	}

	cfg := b.cfg
	cfg.Worker.World = gw
	if b.fn, err = handler.NewSQS(cfg, b.opts...); err != nil {
		t.Fatal(err)
	}
	b.drive(t, run.ID(), 10)
	if st, _ := statusOf(ctx, run); st != world.RunStatusCompleted {
		t.Fatalf("with the right key: run %s, want completed", st)
	}
}

// TestSQSKeylessFunctionHoldsSealedRun: a flow function with no
// encryption configured receives the message of a run an encrypting
// client started. It must not run the workflow on the envelope (before,
// the int workflow failed USER_ERROR): the record is not a failure, the
// message goes back to the queue naming the key, the run stays as it is,
// and a function with the key then completes it.
func TestSQSKeylessFunctionHoldsSealedRun(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{knobs: []knobs.Option{knobs.WithVersionRetry(10*time.Millisecond, 20*time.Millisecond)}})
	keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, encrypt.DataKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := encrypt.Wrap(b.w, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Config{World: gw, Registry: b.reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := serial.Start(ctx, client, 2)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := lambdaCtx(t, "req-keyless", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("m1", messageBody(t, world.Message{RunID: run.ID()}), 1000),
	}})
	if got := failedIDs(resp); len(got) != 0 {
		t.Fatalf("batchItemFailures %v, want none: a missing key is not the message's failure", got)
	}
	if st, err := statusOf(ctx, run); err != nil || st != world.RunStatusPending {
		t.Fatalf("run status %s (%v), want it still pending: the keyless function must not run it", st, err)
	}
	var queued []world.Message
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !refused(queued, run.ID()); {
		time.Sleep(10 * time.Millisecond)
		queued = b.queued(t)
	}
	if !refused(queued, run.ID()) {
		t.Fatalf("no message of run %s sent back with Refused 1: %+v", run.ID(), queued)
	}
	var logged bool
	for _, l := range b.logs.lines(t) {
		logged = logged || (l["level"] == "ERROR" && l["run"] == run.ID() && l["keyId"] == "k1")
	}
	if !logged {
		t.Fatalf("no ERROR line naming run %s and keyId k1 in %v", run.ID(), b.logs.lines(t))
	}

	cfg := b.cfg
	cfg.Worker.World = gw
	if b.fn, err = handler.NewSQS(cfg, b.opts...); err != nil {
		t.Fatal(err)
	}
	b.drive(t, run.ID(), 10)
	if st, _ := statusOf(ctx, run); st != world.RunStatusCompleted {
		t.Fatalf("with the key: run %s, want completed", st)
	}
}

// refused reports whether ms holds a message of run sent back once.
func refused(ms []world.Message, run string) bool {
	for _, m := range ms {
		if m.RunID == run && m.Refused == 1 {
			return true
		}
	}
	return false
}
