// Package webui is Skein's dashboard: an http.Handler that shows a World's
// runs in a browser and acts on them.
//
// Pages are rendered on the server with html/template, which escapes every
// string a workflow or its input put in a run (names, payloads, errors,
// stream text); they work without JavaScript. One small script, embedded
// with the stylesheet (no CDN, no build step), keeps pages live through
// Server-Sent Events: it appends stream chunks as a run writes them
// (/runs/{id}/stream), and follows the live subscription (skeinhttp's
// handler, mounted at /events) to update a run's status in place and to
// count the events committed since a page was drawn.
//
//   - / lists runs, newest first, filtered by workflow, status, attribute,
//     code version and creation time, a page at a time, marking a run whose
//     compensation failed or that is still compensating;
//   - /runs/{id} shows a run: its summary (with its compensation counts),
//     input and output, the Gantt timeline `skein runs show` draws in the
//     terminal, its steps with their attempts and errors (and a compensable
//     step's compensation: its status, attempts and error), hooks, sleeps,
//     output streams (live) and its events with their payloads
//     (claim-checked payloads come back through the World's read API, as
//     every reader gets them);
//   - /dlq, with Config.DeadLetters (skein ui on a deployed stack), lists
//     the dead-letter queue's messages, each with the run a redrive would
//     resume (its workflow and status), and offers the redrive.
//
// Actions (cancel, resume a hook, rerun a finished run, retry or fail a held
// run, redrive the dead letters) are POST forms carrying a CSRF token: a random value in a cookie that
// the form repeats in a hidden field (double submit), and the request's
// Origin (or Referer) must name the host it was sent to. A read-only
// dashboard (Config.ReadOnlyReason), over a store another process writes,
// hides them and refuses them with 403.
//
// The handler does not listen: the caller chooses the address. `skein ui`
// binds 127.0.0.1 unless told otherwise. A worker can serve the dashboard
// over its own store, with write access, beside its other handlers:
//
//	ui, err := webui.New(webui.Config{Client: worker.Client()})
//	if err != nil { ... }
//	mux := http.NewServeMux()
//	mux.Handle("/", ui)
//	go http.ListenAndServe("127.0.0.1:8089", mux)
package webui
