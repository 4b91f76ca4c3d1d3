package sdk_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

type approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// approvalIn drives awaitApproval: the hook's token, and whether the
// workflow handles a payload that does not decode (by waiting for the next).
type approvalIn struct {
	Token  string
	Handle bool
}

// approvalOut is what awaitApproval saw.
type approvalOut struct {
	Approval approval
	Rejected []string // the payload errors it handled
}

var awaitApproval = sdk.New("await-approval", func(ctx sdk.Context, in approvalIn) (approvalOut, error) {
	h := sdk.NewHook[approval](ctx, sdk.HookOptions{Token: in.Token})
	var out approvalOut
	for {
		a, err := h.Receive(ctx)
		var pe *sdk.SerializationError
		if in.Handle && errors.As(err, &pe) && pe.HookID != "" {
			out.Rejected = append(out.Rejected, pe.What+": "+pe.Err.Error())
			continue
		}
		if err != nil {
			return out, err
		}
		out.Approval = a
		return out, nil
	}
})

// TestHookPayloadOfWrongType: a payload that does not decode as the hook's
// type is accepted by ResumeHook and reaches the workflow as a
// *SerializationError naming the token and the type: handled, the run goes on to
// the next payload; returned, the run fails with HOOK_PAYLOAD_INVALID and
// that error, typed again, never a "failed to serialize result". The
// webhook handler does not deliver to a hook that is not a webhook.
func TestHookPayloadOfWrongType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, awaitApproval)
	srv := httptest.NewServer(sdk.WebhookHandler(e.client))
	t.Cleanup(srv.Close)
	for _, handle := range []bool{true, false} {
		name := map[bool]string{true: "handled", false: "unhandled"}[handle]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			token := "approve/" + name
			run, err := awaitApproval.Start(ctx, e.client, approvalIn{Token: token, Handle: handle})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
			// Through the webhook handler: not a webhook, so 404, and the run is unharmed.
			resp, err := http.Post(srv.URL+sdk.WebhookPath+token, "application/json", strings.NewReader(`"yes"`))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("webhook POST to a plain hook: %d, want 404", resp.StatusCode)
			}
			if _, err := e.client.ResumeHook(ctx, token, "yes"); err != nil {
				t.Fatalf("ResumeHook with a payload of another type: %v", err)
			}
			if handle {
				if _, err := e.client.ResumeHook(ctx, token, approval{Approved: true, By: "dana"}); err != nil {
					t.Fatal(err)
				}
				out, err := run.Result(ctx)
				if err != nil || !out.Approval.Approved || len(out.Rejected) != 1 {
					t.Fatalf("run: %+v, %v", out, err)
				}
				if want := "sdk_test.approval: json: cannot unmarshal string"; !strings.Contains(out.Rejected[0], want) {
					t.Errorf("the handled error %q lacks %q", out.Rejected[0], want)
				}
				return
			}
			_, err = run.Result(ctx)
			rf := mustAs[*sdk.RunFailedError](t, err)
			pe := mustAs[*sdk.SerializationError](t, err)
			if rf.Code != world.CodeHookPayloadInvalid || pe.Token != token || pe.What != "sdk_test.approval" || !pe.Decode || pe.HookID == "" {
				t.Fatalf("run failed with %s: %#v", rf.Code, pe)
			}
			msg := err.Error()
			if strings.Contains(msg, "failed to serialize") || !strings.Contains(msg, `hook "approve/unhandled" received a payload that does not decode as sdk_test.approval`) {
				t.Errorf("error: %s", msg)
			}
			r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
			if err != nil || r.ErrorCode != world.CodeHookPayloadInvalid || r.Error == nil || r.Error.Type != "HookPayloadError" {
				t.Fatalf("the run as stored: code %q error %+v, %v", r.ErrorCode, r.Error, err)
			}
		})
	}
}
