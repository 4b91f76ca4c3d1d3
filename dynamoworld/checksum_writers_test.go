package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestItemChecksumConcurrentWriters: writers in four processes (Worlds
// with caches of their own, so each diffs from its own view) change
// different attributes of one run's items at once: holds and releases
// (the head's status and its held error), attributes (the body), a step's
// lease renewals (the step item), and steps with claim-checked and inline
// payloads (commits, step items). No write is refused as corrupt, and
// afterwards every item verifies and every read of the run works. The
// whole-item checksum this replaced failed runs here.
func TestItemChecksumConcurrentWriters(t *testing.T) {
	f := &sumFixture{t: t}
	ctx := context.Background()
	f.c = dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, url := dynamotest.NewResources(t, f.c)
	f.table = res.Table
	open := func(cache int) *dynamoworld.World {
		cfg := dynamotest.Config(f.c, res, url)
		w, err := dynamoworld.New(ctx, cfg, knobs.WithCacheRuns(cache))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}
	f.fresh = func() *dynamoworld.World { return open(-1) }
	f.run, f.step = ids.New(world.PrefixRun), ids.New(world.PrefixStep)
	holder, leaser, attrs, stepper := open(0), open(0), open(0), open(0)
	mustAppend(t, holder, f.run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: bigJSON("run", 2000)}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: f.step, Data: &world.StepCreated{StepName: "long", Input: []byte(`{"n":1}`)}})
	mustAppend(t, holder, f.run, world.EventInput{CorrelationID: f.step, Data: &world.StepStarted{LeaseTTL: time.Hour}})

	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	var (
		mu       sync.Mutex
		corrupt  []error
		attempts = map[string]int{}
		landed   = map[string]int{}
	)
	note := func(who string, err error) {
		mu.Lock()
		defer mu.Unlock()
		attempts[who]++
		if err == nil {
			landed[who]++
		}
		if errors.Is(err, world.ErrCorrupt) {
			corrupt = append(corrupt, fmt.Errorf("%s: %w", who, err))
		}
	}
	appendTo := func(w *dynamoworld.World, evs ...world.EventInput) error {
		_, err := w.Append(ctx, &world.AppendParams{RunID: f.run, Events: evs})
		return err
	}
	writers := map[string]func(i int){
		"hold": func(i int) {
			note("hold", appendTo(holder, world.EventInput{Data: &world.RunHeld{ErrorCode: world.CodeReplayDivergence, Attempt: i + 1,
				Error: &world.ErrorData{Message: strings.Repeat("diverged ", i+1)}}}))
			note("release", appendTo(holder, world.EventInput{Data: &world.RunStarted{}}))
		},
		"attributes": func(i int) {
			note("attributes", appendTo(attrs, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"round": strconv.Itoa(i)}}}))
		},
		"lease": func(int) {
			_, err := leaser.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: f.run, StepID: f.step, Attempt: 1, TTL: time.Hour})
			note("lease", err)
		},
		"steps": func(i int) {
			id := ids.New(world.PrefixStep)
			in := []byte(`{"i":` + strconv.Itoa(i) + `}`)
			if i%3 == 0 {
				in = bigJSON("in"+strconv.Itoa(i), dynamoworld.DefaultClaimCheckThreshold+i)
			}
			note("steps", appendTo(stepper, world.EventInput{CorrelationID: id, Data: &world.StepCreated{StepName: "s", Input: in}},
				world.EventInput{CorrelationID: id, Data: &world.StepStarted{}}))
			note("steps", appendTo(stepper, world.EventInput{CorrelationID: id, Data: &world.StepCompleted{Result: in}}))
		},
	}
	var wg sync.WaitGroup
	for _, write := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				write(i)
			}
		}()
	}
	wg.Wait()
	if len(corrupt) > 0 {
		t.Fatalf("%d writes met corrupt items (attempts %v): %v", len(corrupt), attempts, errors.Join(corrupt...))
	}
	// The run ends: its body gets its output.
	if err := appendTo(holder, world.EventInput{Data: &world.RunStarted{}}); err != nil && errors.Is(err, world.ErrCorrupt) {
		t.Fatal(err)
	}
	mustAppend(t, stepper, f.run, world.EventInput{CorrelationID: f.step, Data: &world.StepCompleted{Result: []byte(`{"done":true}`)}},
		world.EventInput{Data: &world.RunCompleted{Output: []byte(`{"ok":true}`)}})
	// Its rest: deactivated while attributes still change (the body).
	wg.Add(2)
	go func() {
		defer wg.Done()
		note("rest", appendTo(holder, world.EventInput{Data: &world.RunDeactivated{}}))
	}()
	go func() {
		defer wg.Done()
		for i := range 3 {
			note("attributes", appendTo(attrs, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"after": strconv.Itoa(i)}}}))
		}
	}()
	wg.Wait()
	if len(corrupt) > 0 {
		t.Fatalf("%d writes met corrupt items: %v", len(corrupt), errors.Join(corrupt...))
	}
	for sk, it := range f.items() {
		if fault := itemsum.Verify(it); fault != nil {
			t.Errorf("item %s: %s %s", sk, fault.Attr, fault.What)
		}
	}
	for name, read := range f.reads(f.fresh()) {
		if strings.Contains(name, "claim-checked") {
			continue // the fixture's big step is not in this run
		}
		if err := read(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	t.Logf("writes attempted %v, landed %v", attempts, landed)
	for who, n := range attempts {
		if landed[who] < n/2 {
			t.Errorf("%s: %d of %d writes landed: the writers did not write", who, landed[who], n)
		}
	}
}
