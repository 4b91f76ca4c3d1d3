package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
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

// serve runs each POST (an action) with the store's lock held. hosts are
// the host names the dashboard answers to (webui.Config.Hosts; nil: any).
// A POST that does not name such a host, come from one of the dashboard's
// pages and carry its CSRF token goes to the dashboard, which refuses it,
// without the lock: a page of another site must not be able to make the
// dashboard take the store, even for a moment.
func (a *actWorld) serve(h http.Handler, hosts []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !fromDashboard(r, hosts) || !hasCSRF(w, r) {
			h.ServeHTTP(w, r) // reads, and what the dashboard refuses for its own reason
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

// fromDashboard reports whether a POST names a host the dashboard answers
// to and comes from one of its pages (its Origin or Referer is the same
// host), as the dashboard requires of an action: only such a request is
// told which process holds the store.
func fromDashboard(r *http.Request, hosts []string) bool {
	if hosts != nil {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !slices.Contains(hosts, strings.Trim(host, "[]")) {
			return false
		}
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Referer()
	}
	u, err := url.Parse(from)
	return err == nil && u.Host != "" && u.Host == r.Host
}

// maxActionForm bounds the form hasCSRF reads (webui's own bound on an
// action's form).
const maxActionForm = 1 << 20

// hasCSRF reports whether a POST carries the dashboard's double-submit
// token: a well-formed cookie (webui's skein_csrf) that the form's csrf
// field repeats. The dashboard checks it again, with the rest.
func hasCSRF(w http.ResponseWriter, r *http.Request) bool {
	c, err := r.Cookie("skein_csrf")
	if err != nil || len(c.Value) != 64 {
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
	return r.ParseForm() == nil && subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(c.Value)) == 1
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
