package sdk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// Started is what StartJSON did: the run's ID, and whether its idempotency
// key had already started it (Existed) rather than this call creating it.
type Started struct {
	ID      string
	Existed bool
}

// StartJSON starts a run of the named workflow with input, already JSON
// (empty means the input type's zero value), for callers that hold JSON
// rather than a Go value, such as an HTTP API. Before it creates the run,
// it decodes input into the workflow's input type as the run would: an
// input that does not decode is a *RequestError of Kind world.ErrInvalid
// and a name the client's Registry does not hold one of Kind
// ErrUnknownWorkflow, and neither creates a
// run (StartUnregistered skips both checks). With WithIdempotencyKey, a key
// that already started a run of the workflow with the same input (the same
// JSON value) returns that run with Existed set (an unfinished one is
// woken); a key that started a run of another workflow, or of this one
// with another input, is a *RequestError of Kind world.ErrConflict.
func StartJSON(ctx context.Context, c *Client, workflowName string, input json.RawMessage, opts ...StartOption) (*Started, error) {
	o := c.startOptions(ctx, opts)
	if err := c.checkStart(workflowName, input, o); err != nil {
		return nil, err
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	} else if !json.Valid(input) {
		return nil, &RequestError{Kind: world.ErrInvalid, Workflow: workflowName, Err: fmt.Errorf("not valid JSON")}
	}
	id, existed, err := c.start(ctx, workflowName, input, o)
	if err != nil {
		return nil, err
	}
	return &Started{ID: id, Existed: existed}, nil
}

// StreamPage is one page of a stream: its chunks, the index to read from
// next, and whether the stream is closed and this page reaches its end.
type StreamPage struct {
	Chunks []StreamChunk
	Next   int64
	Done   bool
}

// ReadStreamPage reads the chunks of a run's stream written so far from
// opts.Start, without waiting for more: the read a poller repeats from
// Next until Done. A stream nothing has written to yet is an empty page
// that is not done, until the run is at rest: then it is done.
func (c *Client) ReadStreamPage(ctx context.Context, runID string, opts StreamOptions) (*StreamPage, error) {
	name, err := streamName(opts.Namespace)
	if err != nil {
		return nil, err
	}
	p, err := restStreams{c.w}.ReadStream(ctx, &world.ReadStreamParams{RunID: runID, Name: name, Start: opts.Start, Limit: opts.Limit})
	if err != nil {
		return nil, err
	}
	out := &StreamPage{Next: p.Next, Done: p.Done, Chunks: make([]StreamChunk, len(p.Chunks))}
	for i, ch := range p.Chunks {
		if err := sealedChunk(runID, ch.Data); err != nil {
			return nil, err
		}
		out.Chunks[i] = decodeChunk(ch)
	}
	return out, nil
}
