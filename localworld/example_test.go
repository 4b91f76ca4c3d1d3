package localworld_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// Open an in-memory World, create and start a run in one commit, and read
// its log back.
func Example() {
	ctx := context.Background()
	w, err := localworld.Open(localworld.Config{}) // Path "" = in memory
	if err != nil {
		panic(err)
	}
	defer w.Close()

	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	res, err := w.Append(ctx, &world.AppendParams{
		RunID: runID,
		Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "greet", Input: json.RawMessage(`{"name":"Ada"}`)}},
			{Data: &world.RunStarted{}},
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("run is", res.Run.Status, "at seq", res.Run.LastSeq)

	page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID})
	if err != nil {
		panic(err)
	}
	for _, e := range page.Items {
		fmt.Println(e.Seq, e.Type())
	}
	fmt.Println("has more:", page.HasMore, "cursor set:", page.Cursor != "")
	// Output:
	// run is running at seq 2
	// 1 run_created
	// 2 run_started
	// has more: false cursor set: true
}
