package encrypt_test

import (
	"context"
	"encoding/json"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

var (
	chargeCalls atomic.Int64
	chargeStep  = workflow.NewStep("keyless-charge", func(ctx context.Context, c charge) (charge, error) {
		chargeCalls.Add(1)
		return charge{ChargeID: "ch_" + c.ChargeID, Cents: c.Cents}, nil
	})
	chargeFlow = workflow.New("keyless-charge-flow", func(ctx workflow.Context, c charge) (charge, error) {
		return chargeStep.Call(ctx, c)
	})
)

// runWorker runs a worker on w (its queue too) until stop is called.
func runWorker(t *testing.T, w world.World, log *slog.Logger) (stop func()) {
	t.Helper()
	reg := workflow.NewRegistry().MustRegister(chargeFlow, chargeStep)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wk, err := worker.New(worker.Config{
		World: w, Consumer: w.(world.Consumer), Registry: reg, Logger: log,
		Engine: worker.EngineOptions{MaxDeliveries: 3},
	}, knobs.WithPollWait(10*time.Millisecond), knobs.WithRetryDelay(func(int) time.Duration { return 5 * time.Millisecond }),
		knobs.WithVersionRetry(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = wk.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// TestKeylessWorkerHoldsSealedRun: a local Worker with no encryption
// meets a run an encrypting client started. Before, it ran the struct
// workflow on the envelope (zero values) and completed the run with
// {"chargeId":"ch_","cents":0} stored in clear. Now it never runs the
// workflow: the message goes back to the queue, far past MaxDeliveries,
// and the run waits; a worker with the key then completes it.
func TestKeylessWorkerHoldsSealedRun(t *testing.T) {
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keyed, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Config{World: keyed, Registry: workflow.NewRegistry().MustRegister(chargeFlow, chargeStep)})
	if err != nil {
		t.Fatal(err)
	}
	before := chargeCalls.Load()
	id, err := client.Start(ctx, chargeFlow.Name(), charge{ChargeID: "42", Cents: 500})
	if err != nil {
		t.Fatal(err)
	}

	var logs syncBuf
	stopKeyless := runWorker(t, lw, slog.New(slog.NewTextHandler(&logs, nil)))
	for deadline := time.Now().Add(60 * time.Second); strings.Count(logs.String(), "run="+id) < 8 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stopKeyless()
	if n := strings.Count(logs.String(), "run="+id); n < 8 {
		t.Fatalf("the keyless worker met run %s %d times, want at least 8 (3 deliveries allowed):\n%s", id, n, logs.String())
	}
	if !strings.Contains(logs.String(), "keyId=k1") {
		t.Errorf("the keyless worker's log names no key:\n%s", logs.String())
	}
	if info, err := client.GetRun(ctx, id); err != nil || info.Status != world.RunStatusPending {
		t.Fatalf("after the keyless worker: run %+v (%v), want it pending", info, err)
	}
	if n := chargeCalls.Load() - before; n != 0 {
		t.Fatalf("the keyless worker ran the step %d times on an envelope", n)
	}

	runWorker(t, keyed, nil)
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var got charge
	if err := client.Result(rctx, id, &got); err != nil || got != (charge{ChargeID: "ch_42", Cents: 500}) {
		t.Fatalf("with a keyed worker: result %+v, %v", got, err)
	}
}

// TestKeylessWorkerHoldsSealedStep: the message of a background step of
// a sealed run, received by a worker with no encryption, leaves the step
// alone (before, its body ran on the envelope); a worker with the key
// then runs it on its input.
func TestKeylessWorkerHoldsSealedStep(t *testing.T) {
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keyed := reader(t, lw, keyring(t, "k1", map[string][]byte{"k1": key(1)}))
	appendAll(t, keyed, runA,
		world.EventInput{Data: &world.RunCreated{WorkflowName: chargeFlow.Name(), Input: json.RawMessage(`{"chargeId":"42","cents":500}`)}},
		world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: stepA, Data: &world.StepCreated{StepName: chargeStep.Name(), Input: json.RawMessage(`{"chargeId":"42","cents":500}`)}})
	body, err := world.EncodeMessage(world.Message{RunID: runA, StepID: stepA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Enqueue(ctx, &world.EnqueueParams{Body: body}); err != nil {
		t.Fatal(err)
	}
	before := chargeCalls.Load()
	var logs syncBuf
	stop := runWorker(t, lw, slog.New(slog.NewTextHandler(&logs, nil)))
	for deadline := time.Now().Add(60 * time.Second); strings.Count(logs.String(), "run="+runA) < 8 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if n := strings.Count(logs.String(), "run="+runA); n < 8 {
		t.Fatalf("the keyless worker met the step's message %d times, want at least 8:\n%s", n, logs.String())
	}
	if n := chargeCalls.Load() - before; n != 0 {
		t.Fatalf("the keyless worker ran the step %d times on an envelope", n)
	}
	if st, err := keyed.GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepA}); err != nil || st.Status != world.StepStatusPending {
		t.Fatalf("after the keyless worker: step %+v, %v; want it pending", st, err)
	}

	runWorker(t, keyed, nil)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := keyed.GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepA})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == world.StepStatusCompleted {
			if string(st.Output) != `{"chargeId":"ch_42","cents":500}` {
				t.Fatalf("the keyed worker's step result %s", st.Output)
			}
			return
		}
	}
	t.Fatal("a worker with the key never ran the step")
}
