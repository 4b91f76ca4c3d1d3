package handler

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// The JSON shapes of the API's requests and responses
// (docs/api/openapi.yaml names them after these types).

// startRequest is POST /v1/workflows/{name}/runs's body.
type startRequest struct {
	Input          json.RawMessage   `json:"input"`
	IdempotencyKey string            `json:"idempotencyKey"`
	Attributes     map[string]string `json:"attributes"`
}

// cancelRequest is POST /v1/runs/{id}/cancel's (optional) body.
type cancelRequest struct {
	Reason string `json:"reason"`
	// Compensate asks for the run's completed steps to be compensated
	// after the cancellation (client.CancelCompensating).
	Compensate bool `json:"compensate"`
}

// resumeRequest is POST /v1/hooks/resume's body.
type resumeRequest struct {
	Token   string          `json:"token"`
	Payload json.RawMessage `json:"payload"`
}

// resumeResponse names the hook a payload was delivered to.
type resumeResponse struct {
	HookID string `json:"hookId"`
	RunID  string `json:"runId"`
}

// apiRun is a run. Input and output are in a single run's view, not in
// lists.
type apiRun struct {
	ID string `json:"id"`
	// RunID repeats ID under the name a problem (a 409 on an idempotency
	// key, say) gives the run, so that both responses of a start name it
	// alike.
	RunID          string            `json:"runId"`
	Workflow       string            `json:"workflow"`
	Status         string            `json:"status"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
	Attributes     map[string]string `json:"attributes,omitempty"`
	ParentRunID    string            `json:"parentRunId,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	StartedAt      *time.Time        `json:"startedAt,omitempty"`
	CompletedAt    *time.Time        `json:"completedAt,omitempty"`
	// DeactivatedAt is when the finished run came to rest: its cleanup,
	// its steps still running and its compensations have all ended.
	DeactivatedAt *time.Time `json:"deactivatedAt,omitempty"`
	// DurationMs is from creation to the end, for a run that has ended.
	DurationMs   *int64          `json:"durationMs,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Error        *apiRunError    `json:"error,omitempty"`
	CancelReason string          `json:"cancelReason,omitempty"`
	Hold         *apiHold        `json:"hold,omitempty"`
	// Compensations is how the run's compensations went, when it has had
	// any (client.CompensationInfo).
	Compensations *apiCompensations `json:"compensations,omitempty"`
}

// apiCompensations counts a run's compensations; Failures names those
// that failed for good (in a single run's view).
type apiCompensations struct {
	Status    string           `json:"status"`
	Requested bool             `json:"requested,omitempty"`
	Owed      int              `json:"owed"`
	Running   int              `json:"running"`
	Succeeded int              `json:"succeeded"`
	Failed    int              `json:"failed"`
	Failures  []apiCompFailure `json:"failures,omitempty"`
}

// apiCompFailure is a compensation that failed for good.
type apiCompFailure struct {
	Step    string `json:"step"`
	StepID  string `json:"stepId"`
	Message string `json:"message"`
}

func toAPICompensations(c client.CompensationInfo) *apiCompensations {
	if c.Status() == "" && !c.Requested {
		return nil
	}
	out := &apiCompensations{Status: string(c.Status()), Requested: c.Requested, Owed: c.Owed, Running: c.Running, Succeeded: c.Succeeded, Failed: c.Failed}
	for _, f := range c.Failures {
		out.Failures = append(out.Failures, apiCompFailure{Step: f.Step, StepID: f.StepID, Message: f.Err.Error()})
	}
	return out
}

// apiRunError is a failed run's error.
type apiRunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// apiHold says why a held run is held.
type apiHold struct {
	Code    string    `json:"code"`
	Message string    `json:"message,omitempty"`
	Attempt int       `json:"attempt"`
	Since   time.Time `json:"since"`
	RetryAt time.Time `json:"retryAt"`
}

func toAPIRun(r *client.RunInfo, payloads bool) *apiRun {
	out := &apiRun{
		ID: r.ID, RunID: r.ID, Workflow: r.WorkflowName, Status: string(r.Status), IdempotencyKey: r.IdempotencyKey,
		Attributes: r.Attributes, ParentRunID: r.ParentRunID, CreatedAt: r.CreatedAt.UTC(),
		CancelReason: r.CancelReason, Compensations: toAPICompensations(r.Compensations),
	}
	if !r.StartedAt.IsZero() {
		t := r.StartedAt.UTC()
		out.StartedAt = &t
	}
	if !r.CompletedAt.IsZero() {
		t := r.CompletedAt.UTC()
		out.CompletedAt = &t
		d := r.CompletedAt.Sub(r.CreatedAt).Milliseconds()
		out.DurationMs = &d
	}
	if !r.DeactivatedAt.IsZero() {
		t := r.DeactivatedAt.UTC()
		out.DeactivatedAt = &t
	}
	if payloads {
		out.Input = nonEmpty(r.Input)
		out.Output = nonEmpty(r.Output)
	}
	if r.Status == world.RunStatusFailed {
		out.Error = &apiRunError{Code: r.ErrorCode}
		if r.Err != nil {
			out.Error.Message = r.Err.Error()
		}
	}
	if h := r.Hold; h != nil {
		out.Hold = &apiHold{Code: h.Code, Attempt: h.Attempt, Since: h.Since.UTC(), RetryAt: h.RetryAt.UTC()}
		if h.Err != nil {
			out.Hold.Message = h.Err.Error()
		}
	}
	return out
}

func nonEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// runList is a page of runs.
type runList struct {
	Runs       []*apiRun `json:"runs"`
	NextCursor string    `json:"nextCursor,omitempty"`
	HasMore    bool      `json:"hasMore"`
}

// resultResponse is a completed run's output.
type resultResponse struct {
	Output json.RawMessage `json:"output"`
}

// streamList lists a run's streams.
type streamList struct {
	Streams []apiStream `json:"streams"`
}

// apiStream is one stream: its namespace ("" for the default stream), the
// index of its last chunk (-1 when empty) and whether it is closed.
type apiStream struct {
	Name      string `json:"name"`
	TailIndex int64  `json:"tailIndex"`
	Done      bool   `json:"done"`
}

// chunkPage is a page of a stream.
type chunkPage struct {
	Chunks []apiChunk `json:"chunks"`
	// Next is the start of the next read; Done says the stream is closed
	// and this page reaches its end.
	Next int64 `json:"next"`
	Done bool  `json:"done"`
}

// apiChunk is one chunk: a JSON value (Type "json", Value), text (Type
// "text", Text: bytes that are UTF-8) or other bytes (Type "bytes", Base64).
type apiChunk struct {
	Index  int64           `json:"index"`
	Type   string          `json:"type"`
	Value  json.RawMessage `json:"value,omitempty"`
	Text   *string         `json:"text,omitempty"`
	Base64 string          `json:"base64,omitempty"`
}

func toAPIChunk(c client.StreamChunk) apiChunk {
	out := apiChunk{Index: c.Index}
	switch {
	case c.JSON && json.Valid(c.Data):
		out.Type, out.Value = "json", json.RawMessage(c.Data)
	case utf8.Valid(c.Data):
		s := string(c.Data)
		out.Type, out.Text = "text", &s
	default:
		out.Type, out.Base64 = "bytes", base64.StdEncoding.EncodeToString(c.Data)
	}
	return out
}
