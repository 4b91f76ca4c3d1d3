package worker_test

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// Two deployments share one World, each pinned to its version: a run
// started by v1's c runs on v1's code, a run started by v2's on v2's,
// whatever worker receives their messages first.
func ExampleVersions() {
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	greeting := func(text string) *workflow.Workflow[string, string] {
		return workflow.New("greet", func(ctx workflow.Context, name string) (string, error) { return text + ", " + name, nil })
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running []chan error
	defer func() {
		cancel()
		for _, done := range running {
			<-done
		}
	}()
	deploy := func(version, text string) *client.Client {
		wk, err := worker.New(worker.Config{
			World: w, Registry: workflow.NewRegistry().MustRegister(greeting(text)),
			Version:  version,                  // recorded on the runs its c starts
			Versions: worker.Versions{version}, // the runs it executes
		})
		if err != nil {
			panic(err)
		}
		done := make(chan error, 1)
		go func() { done <- wk.Run(ctx) }()
		running = append(running, done)
		return wk.Client()
	}
	v1, v2 := deploy("v1", "Hello"), deploy("v2", "Welcome")

	for _, c := range []*client.Client{v1, v2, v1} {
		id, err := c.Start(ctx, "greet", "Ada")
		if err != nil {
			panic(err)
		}
		var out string
		err = c.Result(ctx, id, &out)
		info, _ := c.GetRun(ctx, id)
		fmt.Println(info.Version, out, err)
	}
	// Output:
	// v1 Hello, Ada <nil>
	// v2 Welcome, Ada <nil>
	// v1 Hello, Ada <nil>
}
