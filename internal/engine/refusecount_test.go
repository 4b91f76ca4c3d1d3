package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A message refused for its run's version may be received again while
// the executor refusing it is still sending it back (its visibility ran
// out on a busy machine); that second receive finds the send-back claimed
// (world.ErrKeyPending) and fails, and the receive count grows with
// refusals. Seen in TestVersionsOnDynamo/pin under load: the executor of
// the run's version received it a third time with MaxDeliveries 2 and
// failed a run no executor had ever run (MAX_DELIVERIES_EXCEEDED). At the
// limit, a message that was refused is sent again counting one delivery
// and no refusal; the copy at its own limit fails the run, so a message
// that keeps failing on its own version's executors still ends its run.
func TestRefusedReceivesCountNoDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		refused, delivered int
		attempt            int
		wantSent           bool // a copy, else the run fails
	}{
		{"refused, past MaxDeliveries", 3, 0, 3, true},
		{"refused, replaced before", 1, 1, 2, true},
		{"never refused, past MaxDeliveries", 0, 0, 3, false},
		{"a recounted copy past MaxDeliveries", 0, 1, 2, false},
		{"refused, within MaxDeliveries", 2, 0, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw },
				Config{ReplaceAfter: -1, Options: Options{MaxDeliveries: 2}})
			h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
			id := h.start("w", nil)
			ctx := context.Background()
			sent := len(mw.snapshot())
			msg := world.Message{RunID: id, Refused: tc.refused, Delivered: tc.delivered}
			if err := h.eng.HandleDelivery(ctx, msg, tc.attempt); err != nil {
				t.Fatal(err)
			}
			got := mw.snapshot()[sent:]
			run, err := mw.GetRun(ctx, &world.GetRunParams{RunID: id})
			if err != nil {
				t.Fatal(err)
			}
			total := tc.delivered + tc.attempt
			switch {
			case tc.wantSent:
				if len(got) != 1 || got[0].Refused != 0 || got[0].Delivered != tc.delivered+1 || got[0].RunID != id {
					t.Errorf("sent %+v, want one copy with Refused 0, Delivered %d", got, tc.delivered+1)
				}
				if run.Status.Terminal() {
					t.Errorf("run %s %s, want it still going", run.Status, run.ErrorCode)
				}
			case total > 2:
				if run.Status != world.RunStatusFailed || run.ErrorCode != world.CodeMaxDeliveriesExceeded {
					t.Errorf("run %s %s, want failed with %s", run.Status, run.ErrorCode, world.CodeMaxDeliveriesExceeded)
				}
			default:
				if run.Status != world.RunStatusCompleted {
					t.Errorf("run %s %s, want completed", run.Status, run.ErrorCode)
				}
			}
		})
	}
}
