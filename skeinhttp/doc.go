// Package skeinhttp serves Skein's live subscription over HTTP as
// Server-Sent Events, for a browser (EventSource), curl, or a Go program,
// and reads such a stream back (Read).
//
//	h, err := skeinhttp.NewEvents(skeinhttp.EventsConfig{Client: client})
//	mux.Handle("GET /events", h)
//
// NewEvents returns an http.Handler that any server mounts (the skein CLI's
// UI does): it depends on a client.Client only, so it serves every World.
//
// # The stream
//
// A GET, with the query parameters
//
//	run=wrun_…          one run (default: every run)
//	types=a,b           only these event types (repeatable; default: all)
//	snapshot=1          the current state first (see client.SubscribeOptions)
//	after=<cursor>      resume after a cursor (the Last-Event-ID header wins)
//
// answers 200 with Content-Type text/event-stream and then, as they
// commit, one message per update, flushed at once:
//
//	event: snapshot                 the run's state: {"run":…,"steps":[…],"hooks":[…],"waits":[…]}
//	id: <cursor>
//	data: {…}
//
//	id: <cursor>                    an event (the default "message" type): world.Event's JSON
//	data: {"runId":…,"seq":…,"eventType":…,"eventData":{…}}
//
//	event: end                      the run has ended and is at rest: nothing more will come
//	data: {}
//
//	event: error                    the subscription failed; the stream ends
//	data: {"status":500,"error":"…"}
//
// and a comment line (": heartbeat") after 15s without an update, so that proxies and clients see a live connection.
// Every id is the cursor of its update: a client that reconnects sends the
// last one as Last-Event-ID (EventSource does by itself) and gets what it
// missed, each event once. A reconnection after the end of a run's stream
// is answered 204 No Content, which tells EventSource to stop.
//
// Data is JSON on one line: encoding/json escapes every control character
// inside strings, and the writer splits on newlines anyway, so a data line
// never holds a raw newline. Bad parameters are 400, an unknown run 404,
// each with a one-line text/plain message.
//
// Webhook tokens are the capability to resume a webhook, so the stream
// shows them redacted ("sha256:" and 12 hex digits of their SHA-256) unless EventsConfig.ShowTokens:
// in webhook hook_created events and snapshot hooks, and in every
// hook_received, hook_disposed and hook_conflict event (whose correlation
// ID names the hook already).
package skeinhttp
