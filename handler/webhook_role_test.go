package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// webhookRoleWorld is a World with the webhook function's role: it reads
// anything, and its one write is a delivery message sent to the queue
// without an idempotency key (which would write a dedupe item). Any other
// write (an append to a run, a lease, a stream, another message) is
// recorded and refused.
type webhookRoleWorld struct {
	world.World
	mu      sync.Mutex
	refused []string
	sent    int
}

func (w *webhookRoleWorld) refuse(call string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refused = append(w.refused, call)
	return fmt.Errorf("webhook role: %s is not allowed", call)
}

func (w *webhookRoleWorld) Append(context.Context, *world.AppendParams) (*world.AppendResult, error) {
	return nil, w.refuse("Append")
}

func (w *webhookRoleWorld) AcquireRunLease(context.Context, *world.RunLeaseParams) (*world.RunLease, error) {
	return nil, w.refuse("AcquireRunLease")
}

func (w *webhookRoleWorld) RenewRunLease(context.Context, *world.RunLeaseParams) (*world.RunLease, error) {
	return nil, w.refuse("RenewRunLease")
}

func (w *webhookRoleWorld) ReleaseRunLease(context.Context, *world.RunLeaseParams) error {
	return w.refuse("ReleaseRunLease")
}

func (w *webhookRoleWorld) RenewStepLease(context.Context, *world.RenewStepLeaseParams) (*world.Step, error) {
	return nil, w.refuse("RenewStepLease")
}

func (w *webhookRoleWorld) WriteStream(context.Context, *world.WriteStreamParams) error {
	return w.refuse("WriteStream")
}

func (w *webhookRoleWorld) CloseStream(context.Context, *world.CloseStreamParams) error {
	return w.refuse("CloseStream")
}

func (w *webhookRoleWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	switch {
	case p.IdempotencyKey != "":
		return nil, w.refuse("Enqueue with an idempotency key")
	case !sdk.IsWebhookDelivery(p.Body):
		return nil, w.refuse("Enqueue of a message that is not a webhook delivery: " + string(p.Body))
	}
	w.mu.Lock()
	w.sent++
	w.mu.Unlock()
	return w.World.Enqueue(ctx, p)
}

// TestWebhookWritesNothing: the webhook handler, on a World that refuses
// every write but sending a delivery message, answers each kind of webhook
// as before (202, a static response, a step's response), and the flow side
// commits each request to its run.
func TestWebhookWritesNothing(t *testing.T) {
	t.Parallel()
	var role *webhookRoleWorld
	b := setupWebhookWith(t, func(w world.World) world.World {
		role = &webhookRoleWorld{World: w}
		return role
	})
	ctx := context.Background()
	cases := []struct {
		mode   HookMode
		status int
		body   string
	}{
		{"default", http.StatusAccepted, ""},
		{"static", http.StatusOK, "thanks"},
		{"manual", http.StatusCreated, "got order 7"},
	}
	for _, tc := range cases {
		run, err := webhooked.Start(ctx, b.client, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		token := b.token(t, run.ID())
		resp := b.call(t, urlRequest(http.MethodPost, token, "order 7", false))
		if resp.StatusCode != tc.status || resp.Body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.mode, resp.StatusCode, resp.Body, tc.status, tc.body)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := run.Result(rctx)
		cancel()
		if err != nil || out != "POST order 7" {
			t.Errorf("%s: result %q, %v", tc.mode, out, err)
		}
	}
	role.mu.Lock()
	defer role.mu.Unlock()
	if len(role.refused) > 0 {
		t.Errorf("the webhook handler wrote outside its role: %s", strings.Join(role.refused, "; "))
	}
	if role.sent != len(cases) {
		t.Errorf("%d delivery messages sent, want %d", role.sent, len(cases))
	}
}
