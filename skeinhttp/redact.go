package skeinhttp

import (
	"slices"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// redact returns u with webhook tokens replaced by workflow.RedactToken:
// a webhook's in its hook_created event and in a snapshot's hooks, and
// every token of hook_received, hook_disposed and hook_conflict events,
// which cannot tell a webhook's from another (their correlation ID names
// the hook). u itself is not changed.
func redact(u *workflow.Update) *workflow.Update {
	out := *u
	if u.Snapshot != nil {
		st := *u.Snapshot
		st.Hooks = slices.Clone(st.Hooks)
		for i, h := range st.Hooks {
			if h.IsWebhook {
				st.Hooks[i].Token = workflow.RedactToken(h.Token)
			}
		}
		out.Snapshot = &st
		return &out
	}
	if u.Event == nil {
		return &out
	}
	ev := *u.Event
	switch d := ev.Data.(type) {
	case *world.HookCreated:
		if d.IsWebhook {
			c := *d
			c.Token = workflow.RedactToken(d.Token)
			ev.Data = &c
		}
	case *world.HookReceived:
		c := *d
		c.Token = redactOpt(d.Token)
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
	out.Event = &ev
	return &out
}

func redactOpt(tok string) string {
	if tok == "" {
		return ""
	}
	return workflow.RedactToken(tok)
}
