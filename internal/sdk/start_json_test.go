package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

type jsonOrder struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

var jsonStartWorkflow = sdk.New("start-json", func(ctx sdk.Context, o jsonOrder) (int, error) {
	return o.Cents, nil
})

var otherJSONWorkflow = sdk.New("start-json-other", func(ctx sdk.Context, n int) (int, error) { return n, nil })

func jsonClient(t *testing.T) (*sdk.Client, *localworld.World) {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	reg := sdk.NewRegistry()
	if err := reg.Register(jsonStartWorkflow, otherJSONWorkflow); err != nil {
		t.Fatal(err)
	}
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return c, lw
}

func runCount(t *testing.T, c *sdk.Client) int {
	t.Helper()
	p, err := c.ListRuns(context.Background(), sdk.ListRunsOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Runs)
}

// StartJSON refuses an unknown workflow and an input that does not decode
// into the workflow's input type before it creates anything.
func TestStartJSONRefusesWithoutCreatingARun(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		workflow string
		input    string
		check    func(error) bool
	}{
		"unknown workflow": {"nope", `{}`, func(err error) bool {
			var u *sdk.RequestError
			return errors.As(err, &u) && u.Kind == sdk.ErrUnknownWorkflow && u.Workflow == "nope"
		}},
		"wrong type": {"start-json", `{"id":"a","cents":"ten"}`, func(err error) bool {
			var in *sdk.RequestError
			return errors.As(err, &in) && in.Kind == world.ErrInvalid && in.Workflow == "start-json" && errors.Is(err, world.ErrInvalid) &&
				strings.Contains(err.Error(), "cents")
		}},
		"not an object": {"start-json", `[1,2]`, func(err error) bool { return errors.Is(err, world.ErrInvalid) }},
		"not JSON":      {"start-json", `{"id":`, func(err error) bool { return errors.Is(err, world.ErrInvalid) }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := jsonClient(t)
			s, err := sdk.StartJSON(context.Background(), c, tc.workflow, json.RawMessage(tc.input))
			if err == nil || !tc.check(err) {
				t.Fatalf("StartJSON = %+v, %v", s, err)
			}
			if n := runCount(t, c); n != 0 {
				t.Fatalf("%d runs created, want none", n)
			}
		})
	}
}

// The same idempotency key returns the same run, Existed the second time;
// the key of another workflow's run is a conflict.
func TestStartJSONIdempotencyKey(t *testing.T) {
	t.Parallel()
	c, _ := jsonClient(t)
	ctx := context.Background()
	in := json.RawMessage(`{"id":"o1","cents":250}`)
	first, err := sdk.StartJSON(ctx, c, "start-json", in, sdk.WithIdempotencyKey("k1"))
	if err != nil || first.Existed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := sdk.StartJSON(ctx, c, "start-json", in, sdk.WithIdempotencyKey("k1"))
	if err != nil || !again.Existed || again.ID != first.ID {
		t.Fatalf("again: %+v, %v; want run %s, existed", again, err, first.ID)
	}
	if _, err := sdk.StartJSON(ctx, c, "start-json-other", json.RawMessage(`3`), sdk.WithIdempotencyKey("k1")); !errors.Is(err, world.ErrConflict) {
		t.Fatalf("other workflow, same key: %v, want ErrConflict", err)
	}
	if n := runCount(t, c); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	info, err := c.GetRun(ctx, first.ID)
	if err != nil || string(info.Input) != string(in) {
		t.Fatalf("input %s, %v", info.Input, err)
	}
}

// ReadStreamPage returns what was written so far and does not wait.
func TestReadStreamPage(t *testing.T) {
	t.Parallel()
	c, lw := jsonClient(t)
	ctx := context.Background()
	s, err := sdk.StartJSON(ctx, c, "start-json", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadStreamPage(ctx, s.ID, sdk.StreamOptions{})
	if err != nil || len(p.Chunks) != 0 || p.Done {
		t.Fatalf("empty stream: %+v, %v", p, err)
	}
	// What a step's writer stores: a tag byte, then the data.
	chunks := [][]byte{[]byte("bhello"), []byte(`j{"n":1}`), []byte("bbye")}
	if err := lw.WriteStream(ctx, &world.WriteStreamParams{RunID: s.ID, Name: "user", Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	p, err = c.ReadStreamPage(ctx, s.ID, sdk.StreamOptions{Start: 1, Limit: 1})
	if err != nil || len(p.Chunks) != 1 || !p.Chunks[0].JSON || string(p.Chunks[0].Data) != `{"n":1}` || p.Next != 2 || p.Done {
		t.Fatalf("page: %+v, %v", p, err)
	}
	if err := lw.CloseStream(ctx, &world.CloseStreamParams{RunID: s.ID, Name: "user"}); err != nil {
		t.Fatal(err)
	}
	p, err = c.ReadStreamPage(ctx, s.ID, sdk.StreamOptions{Start: -1})
	if err != nil || len(p.Chunks) != 1 || string(p.Chunks[0].Data) != "bye" || p.Chunks[0].Index != 2 || !p.Done {
		t.Fatalf("last: %+v, %v", p, err)
	}
}
