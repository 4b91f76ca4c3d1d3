package handler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// Every sentinel of the world maps to its status (world.Status's), typed
// errors included, wrapped or not; other errors are a 500 that shows
// nothing of the cause.
func TestProblemFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{world.ErrNotFound, 404, "NOT_FOUND"},
		{fmt.Errorf("get: %w", world.ErrNotFound), 404, "NOT_FOUND"},
		{&world.RefusalError{Kind: world.ErrConflict, EventType: world.EventRunCreated, Entity: "r"}, 409, "CONFLICT"},
		{&world.RefusalError{Kind: world.ErrLeaseHeld, Entity: "r", Holder: "o"}, 409, "CONFLICT"},
		{world.ErrGone, 410, "GONE"},
		{&world.RefusalError{Kind: world.ErrGone, Entity: "r", Reason: "output has expired"}, 410, "GONE"},
		{&world.RefusalError{Kind: world.ErrTooEarly, EventType: world.EventStepStarted, Entity: "s", Until: time.Unix(0, 0)}, 425, "TOO_EARLY"},
		{&world.RefusalError{Kind: world.ErrInvalid, EventType: world.EventRunCreated, Reason: "bad"}, 400, "INVALID_REQUEST"},
		{&client.RequestError{Kind: client.ErrUnknownWorkflow, Workflow: "w"}, 404, "UNKNOWN_WORKFLOW"},
		{&client.RequestError{Kind: world.ErrInvalid, Workflow: "w", Err: errors.New("x")}, 400, "INVALID_INPUT"},
		{&client.RequestError{Kind: world.ErrNotFound, Token: "t"}, 404, "HOOK_NOT_FOUND"},
		{&client.RequestError{Kind: world.ErrConflict, Key: "k", RunID: "r", Workflow: "w", Requested: "w", InputDiffers: true}, 409, "CONFLICT"},
		{context.DeadlineExceeded, 504, "TIMEOUT"},
		{fmt.Errorf("get run: %w", &encrypt.KeyError{KeyID: "k1", RunID: "wrun_x", Err: errors.New("no such key")}), 500, "KEY_UNAVAILABLE"},
		{errors.New("dynamodb: secret internals"), 500, "INTERNAL"},
	} {
		p := problemFor(c.err)
		if p.Status != c.status || p.Code != c.code || p.Type == "" || p.Title == "" {
			t.Errorf("%v: %+v, want %d %s", c.err, p, c.status, c.code)
		}
		if ws := world.Status(c.err); ws != 500 && ws != p.Status {
			t.Errorf("%v: status %d, world.Status says %d", c.err, p.Status, ws)
		}
	}
	if p := problemFor(errors.New("dynamodb: secret internals")); p.Detail != "the request failed; the function's log has the cause" {
		t.Errorf("500 detail %q", p.Detail)
	}
}

// TestProblemForKeyUnavailable: whoever says a run's key is unavailable
// (an encrypting World that cannot open the run; the SDK, whose World
// holds no key, meeting sealed bytes), the API answers KEY_UNAVAILABLE
// naming the run and the key. Before, only the encrypting World's error
// was recognised: a keyless writer's refusal was an INTERNAL error naming
// nothing.
func TestProblemForKeyUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("get run: %w", &encrypt.KeyError{KeyID: "k1", RunID: "wrun_x", Err: encrypt.ErrNoSuchKey}),
		fmt.Errorf("read stream: %w", &sealmark.KeylessError{KeyID: "k1", RunID: "wrun_x", Read: "the stream is encrypted"}),
		&sealmark.KeylessError{KeyID: "k1", RunID: "wrun_x", Doing: "deliver a hook payload"},
	} {
		p := problemFor(err)
		if p.Status != 500 || p.Code != "KEY_UNAVAILABLE" || p.RunID != "wrun_x" || !strings.Contains(p.Detail, `key "k1"`) {
			t.Errorf("%v: %+v, want 500 KEY_UNAVAILABLE naming run wrun_x and key k1", err, p)
		}
	}
}
