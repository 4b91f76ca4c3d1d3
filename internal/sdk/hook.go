package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// HookOptions configures a hook.
type HookOptions struct {
	// Token is what a sender resumes the hook with; it must be unique
	// among active hooks. Empty means a generated token: 22 characters
	// (132 bits) derived from a secret the run drew from crypto/rand when
	// it was created, so it is the same on replay but nobody can compute
	// it from the run ID. A token you choose is only as secret as you make
	// it.
	Token string
	// Metadata is stored with the hook (JSON); GetHookByToken returns it.
	Metadata any
}

// Hook receives payloads of type T sent to its token (Client.ResumeHook),
// in the order they were recorded. It is registered when the workflow next
// waits, and released when it is disposed or the run ends.
//
// A sender cannot know T, so any JSON is accepted and recorded; a payload
// that does not decode as T reaches the workflow as a *SerializationError
// (Token and HookID set) from
// Receive (or the future's Get), which the workflow may handle (log it and
// receive again: the bad payload is consumed). Returned unhandled, it fails
// the run with HOOK_PAYLOAD_INVALID.
type Hook[T any] struct {
	h    *engine.Hook
	reg  *Registry
	next int
	err  error
}

// NewHook creates a hook in the workflow.
func NewHook[T any](ctx Context, opts HookOptions) *Hook[T] {
	c := ctx.impl()
	var meta json.RawMessage
	if opts.Metadata != nil {
		b, err := json.Marshal(opts.Metadata)
		if err != nil {
			return &Hook[T]{err: &SerializationError{What: "hook metadata", Err: err}}
		}
		meta = b
	}
	return newHook[T](c, opts.Token, meta, false)
}

func newHook[T any](c *wfContext, token string, meta json.RawMessage, webhook bool) *Hook[T] {
	if token == "" {
		token = c.ec.NewToken()
	}
	if len(token) > world.MaxTokenLength {
		return &Hook[T]{err: fmt.Errorf("workflow: hook token longer than %d bytes", world.MaxTokenLength)}
	}
	if err := world.CheckText(token); err != nil {
		return &Hook[T]{err: fmt.Errorf("workflow: hook token %q %v", token, err)}
	}
	return &Hook[T]{h: c.ec.Hook(token, meta, webhook), reg: c.reg}
}

// Token returns the hook's token.
func (h *Hook[T]) Token() string {
	if h.h == nil {
		return ""
	}
	return h.h.Token()
}

// Next returns a future of the hook's next payload: the first call gets the
// first payload, the second call the second, and so on. A hook whose token
// another run holds fails with a *HookConflictError; a payload that does not
// decode as T with a *SerializationError (Token and HookID set).
func (h *Hook[T]) Next(ctx Context) Future[T] {
	if h.err != nil {
		return failed[T](h.err)
	}
	k := h.next
	h.next++
	return Future[T]{p: &hookPromise{h: h.h, k: k}}
}

// Receive waits for the hook's next payload.
func (h *Hook[T]) Receive(ctx Context) (T, error) { return h.Next(ctx).Get(ctx) }

// Conflict registers the hook without consuming a payload and reports the
// run that holds its token, or "" when the hook holds it.
func (h *Hook[T]) Conflict(ctx Context) (string, error) {
	if h.err != nil {
		return "", h.err
	}
	ctx.impl().ec.Await(h.h.Registered)
	return h.h.ConflictRunID(), nil
}

// Dispose releases the hook's token when the workflow next waits; later
// payloads are refused. Waiting on the hook afterwards fails with
// ErrHookDisposed.
func (h *Hook[T]) Dispose(ctx Context) {
	if h.h != nil {
		h.h.Dispose()
	}
}

type hookPromise struct {
	h *engine.Hook
	k int
}

func (p *hookPromise) state() (int64, bool) {
	switch {
	case p.h.Len() > p.k:
		_, order := p.h.Payload(p.k)
		return order, true
	case p.h.ConflictRunID() != "":
		return p.h.RegisteredOrder(), true
	case p.h.Disposed():
		return 0, true
	}
	return 0, false
}

func (p *hookPromise) failed() bool { return p.h.Len() <= p.k }

func (p *hookPromise) outcome() (json.RawMessage, error) {
	switch {
	case p.h.Len() > p.k:
		raw, _ := p.h.Payload(p.k)
		return raw, nil
	case p.h.ConflictRunID() != "":
		return nil, &HookConflictError{Token: p.h.Token(), ConflictingRunID: p.h.ConflictRunID()}
	}
	return nil, ErrHookDisposed
}
