package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

type checkedOrder struct {
	ID    string `json:"id"`
	Items int    `json:"items"`
}

var takesCheckedOrder = sdk.New("takes-order", func(ctx sdk.Context, in checkedOrder) (int, error) { return in.Items, nil })

var takesCheckedInt = sdk.New("takes-int", func(ctx sdk.Context, n int) (int, error) { return n, nil })

// startCheckClient returns a client over a fresh local World, given a
// Registry holding takesCheckedOrder and takesCheckedInt when registry is set.
func startCheckClient(t *testing.T, registry bool) *sdk.Client {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	cfg := sdk.ClientConfig{World: lw}
	if registry {
		cfg.Registry = sdk.NewRegistry().MustRegister(takesCheckedOrder, takesCheckedInt)
	}
	c, err := sdk.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func countStartedRuns(t *testing.T, c *sdk.Client) int {
	t.Helper()
	page, err := c.ListRuns(context.Background(), sdk.ListRunsOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Runs)
}

// Client.Start by name checks the input against the registered workflow's
// input type, as StartJSON does, and refuses a misfit with a *RequestError
// before creating a run; StartUnregistered and a client without a Registry
// start it all the same.
func TestClientStartChecksInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		registry bool
		workflow string
		input    any
		opts     []sdk.StartOption
		refused  string // "" when the start creates a run
	}{
		{"a number for a struct", true, "takes-order", 42, nil, "cannot unmarshal number"},
		{"a string for an int", true, "takes-int", "seven", nil, "cannot unmarshal string"},
		{"a field of the wrong type", true, "takes-order", map[string]any{"id": "o1", "items": "two"}, nil, "checkedOrder.items"},
		{"a struct that fits", true, "takes-order", checkedOrder{ID: "o1", Items: 2}, nil, ""},
		{"a map that fits", true, "takes-order", map[string]any{"id": "o1", "items": 2}, nil, ""},
		{"nil is the zero value", true, "takes-order", nil, nil, ""},
		{"StartUnregistered skips the check", true, "takes-order", 42, []sdk.StartOption{sdk.StartUnregistered()}, ""},
		{"no registry, no check", false, "takes-order", 42, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startCheckClient(t, tc.registry)
			id, err := c.Start(context.Background(), tc.workflow, tc.input, tc.opts...)
			if tc.refused == "" {
				if err != nil || id == "" || countStartedRuns(t, c) != 1 {
					t.Fatalf("Start = %q, %v; want one run", id, err)
				}
				return
			}
			var ie *sdk.RequestError
			if !errors.As(err, &ie) || ie.Kind != world.ErrInvalid || ie.Workflow != tc.workflow || !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("Start = %q, %v; want a *RequestError matching world.ErrInvalid saying %q", id, err, tc.refused)
			}
			if !strings.Contains(err.Error(), "no run created") || id != "" {
				t.Errorf("Start = %q, %v; want no run ID and an error saying no run was created", id, err)
			}
			if n := countStartedRuns(t, c); n != 0 {
				t.Errorf("a refused start created %d runs", n)
			}
		})
	}
}

// A run whose input does not decode (started by a client that could not
// check it) fails saying the input did not decode, not that it did not
// serialize.
func TestRunInputDecodeFailureWording(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	reg := sdk.NewRegistry().MustRegister(takesCheckedOrder)
	stop := startWorkers(t, 1, sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithPollWait(10*time.Millisecond))
	defer stop()
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw}) // no Registry: no check
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := c.Start(ctx, "takes-order", 42)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Result(ctx, id, nil)
	var se *sdk.SerializationError
	if !errors.As(err, &se) || !se.Decode || !strings.Contains(err.Error(), "failed to decode workflow input") {
		t.Fatalf("Result = %v; want a *SerializationError saying the workflow input failed to decode", err)
	}
}

// The same idempotency key returns the same run only for the same
// workflow and input (as JSON values); another input or workflow is an
// *RequestError naming the first run, and creates nothing.
func TestIdempotencyKeyInput(t *testing.T) {
	t.Parallel()
	type start func(ctx context.Context, c *sdk.Client, key string) (id string, existed bool, err error)
	byName := func(name string, in any) start {
		return func(ctx context.Context, c *sdk.Client, key string) (string, bool, error) {
			var existed bool
			id, err := c.Start(ctx, name, in, sdk.WithIdempotencyKey(key), sdk.ReportExisting(&existed))
			return id, existed, err
		}
	}
	byJSON := func(name, in string) start {
		return func(ctx context.Context, c *sdk.Client, key string) (string, bool, error) {
			s, err := sdk.StartJSON(ctx, c, name, json.RawMessage(in), sdk.WithIdempotencyKey(key))
			if err != nil {
				return "", false, err
			}
			return s.ID, s.Existed, nil
		}
	}
	typed := func(in checkedOrder) start {
		return func(ctx context.Context, c *sdk.Client, key string) (string, bool, error) {
			r, err := takesCheckedOrder.Start(ctx, c, in, sdk.WithIdempotencyKey(key))
			if err != nil {
				return "", false, err
			}
			return r.ID(), r.Existed(), nil
		}
	}
	o1 := checkedOrder{ID: "o1", Items: 2}
	for _, tc := range []struct {
		name          string
		first, second start
		conflict      bool
		inputDiffers  bool
	}{
		{"same input by name", byName("takes-order", o1), byName("takes-order", o1), false, false},
		{"same input typed", typed(o1), typed(o1), false, false},
		{"same JSON value, other spacing and order", byJSON("takes-order", `{"id":"o1","items":2}`), byJSON("takes-order", ` { "items": 2, "id": "o1" } `), false, false},
		{"typed then JSON", typed(o1), byJSON("takes-order", `{"items":2,"id":"o1"}`), false, false},
		{"no input then null", byJSON("takes-order", ``), byJSON("takes-order", `null`), false, false},
		{"another input by name", byName("takes-order", o1), byName("takes-order", checkedOrder{ID: "o1", Items: 3}), true, true},
		{"another input typed", typed(o1), typed(checkedOrder{ID: "o2", Items: 2}), true, true},
		{"another input as JSON", byJSON("takes-order", `{"id":"o1","items":2}`), byJSON("takes-order", `{"id":"o1","items":3}`), true, true},
		{"a member more", byJSON("takes-order", `{"id":"o1","items":2}`), byJSON("takes-order", `{"id":"o1","items":2,"note":"x"}`), true, true},
		{"another workflow", byName("takes-order", o1), byName("takes-int", 2), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startCheckClient(t, true)
			ctx := context.Background()
			first, existed, err := tc.first(ctx, c, "k")
			if err != nil || existed {
				t.Fatalf("first start = %q, existed %v, %v", first, existed, err)
			}
			second, existed, err := tc.second(ctx, c, "k")
			if !tc.conflict {
				if err != nil || second != first || !existed {
					t.Fatalf("second start = %q, existed %v, %v; want %s again, existed", second, existed, err, first)
				}
				return
			}
			var ce *sdk.RequestError
			if !errors.As(err, &ce) || ce.Kind != world.ErrConflict || !errors.Is(err, world.ErrConflict) {
				t.Fatalf("second start = %q, %v; want a *RequestError matching world.ErrConflict", second, err)
			}
			if ce.RunID != first || ce.Key != "k" || ce.InputDiffers != tc.inputDiffers || !strings.Contains(err.Error(), first) {
				t.Errorf("conflict %+v (%v); want run %s, key k, InputDiffers %v", ce, err, first, tc.inputDiffers)
			}
			if second != "" {
				t.Errorf("a refused start returned run %q", second)
			}
			if n := countStartedRuns(t, c); n != 1 {
				t.Errorf("%d runs, want the first only", n)
			}
		})
	}
}

// Start refusals are typed: an empty idempotency key or workflow name
// matches world.ErrInvalid.
func TestStartRefusalsMatchErrInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(context.Context, *sdk.Client) error
	}{
		{"Client.Start empty key", func(ctx context.Context, c *sdk.Client) error {
			_, err := c.Start(ctx, "takes-int", 1, sdk.WithIdempotencyKey(""))
			return err
		}},
		{"Workflow.Start empty key", func(ctx context.Context, c *sdk.Client) error {
			_, err := takesCheckedInt.Start(ctx, c, 1, sdk.WithIdempotencyKey(""))
			return err
		}},
		{"StartJSON empty key", func(ctx context.Context, c *sdk.Client) error {
			_, err := sdk.StartJSON(ctx, c, "takes-int", json.RawMessage(`1`), sdk.WithIdempotencyKey(""))
			return err
		}},
		{"empty workflow name", func(ctx context.Context, c *sdk.Client) error {
			_, err := c.Start(ctx, "", 1)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startCheckClient(t, true)
			err := tc.start(context.Background(), c)
			if !errors.Is(err, world.ErrInvalid) {
				t.Fatalf("start = %v; want an error matching world.ErrInvalid", err)
			}
			if n := countStartedRuns(t, c); n != 0 {
				t.Errorf("a refused start created %d runs", n)
			}
		})
	}
}

// A schedule's firing is one run whatever its input: a second delivery of
// a firing whose schedule's input changed in the meantime (another deploy)
// finds the firing's run rather than failing as an idempotency conflict.
func TestScheduleFiringIgnoresInputChange(t *testing.T) {
	t.Parallel()
	for _, inputs := range [][2]string{{`{"n":5}`, `{"n":5}`}, {`{"n":5}`, `{"n":6}`}} {
		t.Run(inputs[1], func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			p, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: scheduleRegistry(t)})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range inputs {
				b, err := schedmsg.EncodeMessage(schedmsg.Message{
					ScheduleARN:   "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/nightly",
					ScheduledTime: "2026-11-24T10:00:00Z", Workflow: "scheduled", Input: []byte(in),
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Process(context.Background(), b, 1); err != nil {
					t.Fatalf("firing with input %s: %v", in, err)
				}
			}
			if n := countStartedRuns(t, p.Client()); n != 1 {
				t.Errorf("%d runs, want one for the firing", n)
			}
		})
	}
}

// On an encrypted World the key's run's input is compared as the client
// reads it, opened; a client that cannot open it says so rather than
// guessing.
func TestIdempotencyKeyInputEncrypted(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() }) // after the parallel subtests
	keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	ew, err := encrypt.Wrap(lw, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	reg := sdk.NewRegistry().MustRegister(takesCheckedOrder)
	sealed, err := sdk.NewClient(sdk.ClientConfig{World: ew, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := sdk.NewClient(sdk.ClientConfig{World: lw, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := takesCheckedOrder.Start(ctx, sealed, checkedOrder{ID: "o1", Items: 2}, sdk.WithIdempotencyKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		c        *sdk.Client
		in       checkedOrder
		want     error // nil: the first run again
		keyError bool
	}{
		{"same input", sealed, checkedOrder{ID: "o1", Items: 2}, nil, false},
		{"another input", sealed, checkedOrder{ID: "o1", Items: 9}, world.ErrConflict, false},
		{"a client without the key", plain, checkedOrder{ID: "o1", Items: 2}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := takesCheckedOrder.Start(ctx, tc.c, tc.in, sdk.WithIdempotencyKey("k"))
			var ke interface{ KeyUnavailable() (runID, keyID string) }
			switch {
			case tc.keyError:
				if !errors.Is(err, world.ErrKeyUnavailable) || !errors.As(err, &ke) || !strings.Contains(err.Error(), "cannot be compared") {
					t.Fatalf("Start = %v; want a key-unavailable error about run %s", err, first.ID())
				}
				if run, key := ke.KeyUnavailable(); run != first.ID() || key != "k1" {
					t.Fatalf("Start = %v: names run %s, key %q; want run %s, key k1", err, run, key, first.ID())
				}
			case tc.want != nil:
				if !errors.Is(err, tc.want) {
					t.Fatalf("Start = %v; want %v", err, tc.want)
				}
			default:
				if err != nil || r.ID() != first.ID() || !r.Existed() {
					t.Fatalf("Start = %v; want run %s again", err, first.ID())
				}
			}
		})
	}
}
