package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"path"
	"sync"
	"sync/atomic"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// actWorld is the local store as skein ui serves it. It reads the store
// read-only, without its lock, so that a worker can start on the store
// while the dashboard runs; an action (cancel, resume a hook, rerun, retry,
// fail) takes the lock for as long as it takes (serve wraps each POST), and
// is refused with a lockedError naming the holder while another process
// holds the store.
type actWorld struct {
	*localworld.World // read-only: every read, and what no action writes
	e                 *env

	act    sync.Mutex                       // one action at a time
	locked atomic.Pointer[localworld.World] // the store, locked, during an action
}

// serve runs each POST (an action) with the store's lock held.
func (a *actWorld) serve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		a.act.Lock()
		defer a.act.Unlock()
		lw, err := a.e.openLocked()
		if err != nil {
			refusePage(w, r, err)
			return
		}
		a.locked.Store(lw)
		defer func() { a.locked.Store(nil); _ = lw.Close() }()
		h.ServeHTTP(w, r)
	})
}

// refusePage answers an action refused because the store could not be
// taken (another process holds it): 403, as the dashboard refuses an
// action it may not do, with the reason.
func refusePage(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "<!doctype html>\n<title>Refused</title>\n<h1>Refused</h1>\n<p>%s</p>\n<p><a href=\"%s\">Back to the run</a> · <a href=\"/\">Runs</a></p>\n",
		html.EscapeString(err.Error()), html.EscapeString(path.Dir(r.URL.Path)))
}

// write runs fn on the locked store: the action's, or one opened for fn.
func (a *actWorld) write(fn func(w *localworld.World) error) error {
	if lw := a.locked.Load(); lw != nil {
		return fn(lw)
	}
	lw, err := a.e.openLocked()
	if err != nil {
		return err
	}
	err = fn(lw)
	if cerr := lw.Close(); err == nil {
		err = cerr
	}
	return err
}

func (a *actWorld) Append(ctx context.Context, p *world.AppendParams) (res *world.AppendResult, err error) {
	err = a.write(func(w *localworld.World) error { res, err = w.Append(ctx, p); return err })
	return res, err
}

func (a *actWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (res *world.EnqueueResult, err error) {
	err = a.write(func(w *localworld.World) error { res, err = w.Enqueue(ctx, p); return err })
	return res, err
}

func (a *actWorld) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	return a.write(func(w *localworld.World) error { return w.WriteStream(ctx, p) })
}

func (a *actWorld) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	return a.write(func(w *localworld.World) error { return w.CloseStream(ctx, p) })
}
