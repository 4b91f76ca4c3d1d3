package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestDeliveryOverALimitIsDropped: a hook delivery the run's limits
// refuse (a payload over MaxPayload) can never be committed: it is a
// PermanentError with Reason DeliveryDropped matching the limit, as it was
// when Append wrapped every refusal in a CommitError (a *LimitError is now
// returned bare), not an error retried until the message dead-letters.
func TestDeliveryOverALimitIsDropped(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{Limits: world.Limits{MaxPayload: 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	ctx := context.Background()
	ids := world.NewIDSource(nil, nil)
	runID, hookID, token := ids.New(world.PrefixRun), ids.New(world.PrefixHook), "tok-limit"
	for _, in := range []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage("null")}},
		{Data: &world.RunStarted{}},
		{CorrelationID: hookID, Data: &world.HookCreated{Token: token}},
	} {
		if _, err := lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{in}}); err != nil {
			t.Fatal(err)
		}
	}
	big := json.RawMessage(`{"delivery":"d1","pad":"` + strings.Repeat("x", 512) + `"}`)
	_, _, err = DeliverHook(ctx, lw, time.Now, token, "d1", func() (json.RawMessage, error) { return big, nil })
	var pe *PermanentError
	if !errors.As(err, &pe) || pe.Reason != DeliveryDropped || !errors.Is(err, world.ErrLimitExceeded) {
		t.Fatalf("delivery over MaxPayload: %v, want a PermanentError %q matching world.ErrLimitExceeded", err, DeliveryDropped)
	}
}
