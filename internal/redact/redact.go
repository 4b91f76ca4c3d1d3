// Package redact hides what resumes hooks from what Skein shows of runs:
// webhook tokens in logs, events and subscription updates, and a run's
// secret. Every surface that shows events without -show-tokens (the CLI,
// the dashboard, the SSE feed, the HTTP API) passes them through it.
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Token returns what a log shows of a hook token instead of the token:
// "sha256:" and the first 12 hex digits of its SHA-256. It tells requests
// for different hooks apart and matches a token an operator holds (hash it
// the same way), and resumes nothing: a webhook's token is the capability
// to resume it, and logs are read more widely than the hooks are. The
// webhook handlers log tokens only this way.
func Token(token string) string { return engine.RedactToken(token) }

// Update returns u with webhook tokens replaced by Token, for
// showing a subscription to people who may not resume the webhooks: a
// webhook's token in its hook_created event and in a snapshot's hooks, and
// every token of hook_received, hook_disposed and hook_conflict events,
// which do not say whether the hook is a webhook (their correlation ID
// names the hook). Plain hooks' tokens stay. u itself is not changed.
func Update(u *client.Update) *client.Update {
	out := *u
	if u.Snapshot != nil {
		st := *u.Snapshot
		st.Hooks = slices.Clone(st.Hooks)
		for i, h := range st.Hooks {
			if h.IsWebhook {
				st.Hooks[i].Token = Token(h.Token)
			}
		}
		out.Snapshot = &st
		return &out
	}
	if u.Event == nil {
		return &out
	}
	ev := Event(*u.Event)
	out.Event = &ev
	return &out
}

// Event returns ev with what resumes hooks hidden, for showing an event
// log to people who may not: a webhook's token in its hook_created, every
// token of hook_received, hook_disposed and hook_conflict events (which do
// not say whether the hook is a webhook) and the token in the URL of a
// webhook request a hook_received delivers (recorded before requests were
// recorded redacted) replaced by Token, and the run's secret
// (run_created), from which the run's generated tokens derive, removed. ev
// itself is not changed. Every surface that shows events without
// -show-tokens (the CLI, the dashboard, the SSE feed) passes them through it.
func Event(ev world.Event) world.Event {
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		if len(d.Secret) > 0 {
			c := *d
			c.Secret = nil
			ev.Data = &c
		}
	case *world.HookCreated:
		if d.IsWebhook {
			c := *d
			c.Token = Token(d.Token)
			ev.Data = &c
		}
	case *world.HookReceived:
		c := *d
		c.Token = redactOpt(d.Token)
		c.Payload = redactRequestPayload(d.Payload)
		ev.Data = &c
	case *world.HookDisposed:
		c := *d
		c.Token = redactOpt(d.Token)
		ev.Data = &c
	case *world.HookConflict:
		c := *d
		c.Token = redactOpt(d.Token)
		ev.Data = &c
	}
	return ev
}

func redactOpt(tok string) string {
	if tok == "" {
		return ""
	}
	return Token(tok)
}

// redactRequestPayload returns a hook payload with the token in its URL
// redacted when it is a webhook Request (exactly that shape), and as it is
// otherwise.
func redactRequestPayload(payload json.RawMessage) json.RawMessage {
	if len(payload) == 0 || payload[0] != '{' {
		return payload
	}
	var r workflow.Request
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Method == "" || r.URL == "" {
		return payload
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return payload
	}
	if shown := engine.RedactWebhookURL(u); shown != r.URL {
		r.URL = shown
		if b, err := json.Marshal(r); err == nil {
			return b
		}
	}
	return payload
}
