package localworld_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// Watch every run from the present: each event arrives as its commit
// does, with the cursor that resumes after it.
func ExampleWorld_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	from, err := w.WatchCursor(ctx, &world.WatchParams{}) // the present
	if err != nil {
		panic(err)
	}
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	go func() {
		_, _ = w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "greet", Input: json.RawMessage(`"Ada"`)}},
			{Data: &world.RunStarted{}},
		}})
		_, _ = w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			{Data: &world.RunCompleted{Output: json.RawMessage(`"hello, Ada"`)}},
		}})
	}()
	n := 0
	for e, err := range w.Watch(ctx, &world.WatchParams{After: from}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Event.Seq, e.Event.Type(), e.Cursor != "")
		if n++; n == 3 {
			break
		}
	}
	// Output:
	// 1 run_created true
	// 2 run_started true
	// 3 run_completed true
}
