package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
)

// TestStartRefusals: Workflow.Start refuses a workflow the client's
// Registry does not hold, as Client.Start does, and both refuse an empty
// idempotency key; neither creates a run. A client without a Registry
// starts any workflow.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	known := sdk.New("known", func(ctx sdk.Context, n int) (int, error) { return n, nil })
	stranger := sdk.New("stranger", func(ctx sdk.Context, n int) (int, error) { return n, nil })
	for _, tc := range []struct {
		name     string
		registry bool
		start    func(context.Context, *sdk.Client) error
		want     string // "" means the start succeeds
	}{
		{"Workflow.Start unregistered", true, func(ctx context.Context, c *sdk.Client) error {
			_, err := stranger.Start(ctx, c, 1)
			return err
		}, "stranger"},
		{"Workflow.Start without a registry", false, func(ctx context.Context, c *sdk.Client) error {
			_, err := stranger.Start(ctx, c, 1)
			return err
		}, ""},
		{"Workflow.Start StartUnregistered", true, func(ctx context.Context, c *sdk.Client) error {
			_, err := stranger.Start(ctx, c, 1, sdk.StartUnregistered())
			return err
		}, ""},
		{"Workflow.Start empty key", true, func(ctx context.Context, c *sdk.Client) error {
			_, err := known.Start(ctx, c, 1, sdk.WithIdempotencyKey(""))
			return err
		}, "empty idempotency key"},
		{"Client.Start empty key", false, func(ctx context.Context, c *sdk.Client) error {
			_, err := c.Start(ctx, "known", 1, sdk.WithIdempotencyKey(""))
			return err
		}, "empty idempotency key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			cfg := sdk.ClientConfig{World: lw}
			if tc.registry {
				cfg.Registry = sdk.NewRegistry().MustRegister(known)
			}
			c, err := sdk.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			err = tc.start(ctx, c)
			runs, lerr := c.ListRuns(ctx, sdk.ListRunsOptions{})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tc.want == "" {
				if err != nil || len(runs.Runs) != 1 {
					t.Fatalf("start: %v, %d runs; want one run", err, len(runs.Runs))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v; want an error naming %q", err, tc.want)
			}
			if tc.want == "stranger" && !errors.Is(err, sdk.ErrUnknownWorkflow) {
				t.Errorf("start: %v; want a *RequestError matching ErrUnknownWorkflow", err)
			}
			if len(runs.Runs) != 0 {
				t.Errorf("a refused start created %d runs", len(runs.Runs))
			}
		})
	}
}
