package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// streamWrites is what a step that wrote chunks of Sizes bytes to stream
// "out" met: how many writes were accepted and the refusal that stopped it.
type streamWrites struct {
	Accepted        int
	Err             string
	Max, Size       int64
	What, LimitName string
}

// TestStreamBytesCountWhatCodeWrote: MaxStreamBytes counts the bytes the
// code wrote (not the SDK's tag byte per chunk): with a bound of 5000, five
// writes of 1000 bytes are accepted and one more byte is refused, with a
// *world.LimitError of 5001 bytes that names the stream as the code named
// it ("out"), not as it is stored.
func TestStreamBytesCountWhatCodeWrote(t *testing.T) {
	t.Parallel()
	write := sdk.NewStep("write", func(ctx context.Context, sizes []int) (streamWrites, error) {
		w := sdk.Writer(ctx, "out")
		var got streamWrites
		for _, n := range sizes {
			_, err := w.Write(make([]byte, n))
			var le *world.LimitError
			switch {
			case err == nil:
				got.Accepted++
				continue
			case errors.As(err, &le) && errors.Is(err, world.ErrLimitExceeded):
				got.Max, got.Size, got.What, got.LimitName = le.Max, le.Size, le.What, le.Limit
			}
			got.Err = err.Error()
			break
		}
		return got, nil
	})
	wf := sdk.New("stream-bytes", func(ctx sdk.Context, sizes []int) (streamWrites, error) {
		return write.Call(ctx, sizes)
	})
	e := newEnvWith(t, envOptions{limits: world.Limits{MaxStreamBytes: 5000}}, wf, write)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, []int{1000, 1000, 1000, 1000, 1000, 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Accepted != 5 || got.LimitName != "stream bytes" || got.Max != 5000 || got.Size != 5001 || got.What != `stream "out"` {
		t.Fatalf("%+v; want 5 writes of 1000 bytes accepted, then a *world.LimitError of stream bytes 5001 of 5000 for stream \"out\"", got)
	}
	if strings.Contains(got.Err, "user.") {
		t.Errorf("error %q shows the stored stream name", got.Err)
	}
	if n := len(readAll(t, e.client, run.ID(), sdk.StreamOptions{Namespace: "out"})); n != 5 {
		t.Errorf("the stream holds %d chunks, want the 5 accepted", n)
	}
}
