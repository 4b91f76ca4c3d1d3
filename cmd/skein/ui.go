package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/skeinflow/skein/internal/dlq"
	"github.com/skeinflow/skein/webui"
)

const uiUsage = "[-addr host:port] [-open] [-public]"

const uiHelp = `Serves the dashboard over the store the global flags choose (the local
store, or a deployed stack with -stack or -table...): runs with filters and
pages, each run's timeline, steps, hooks, sleeps, events and live output
streams, and the actions (cancel, resume a hook, rerun, retry or fail a held
run) as forms. On a deployed stack it adds a dead-letter page (/dlq): each
message of the stack's dead-letter queue with the run it would resume, and
a redrive button that does what skein dlq redrive does. It runs until
interrupted (Ctrl-C).

It listens on 127.0.0.1 (this machine only) unless -addr names another
address, which it refuses without -public: the dashboard has no login, and
whoever reaches it can cancel runs and resume hooks.

On a local store, the dashboard reads the store without holding it, so a
worker (or the quickstart) can start, and write, while it runs. Each action
takes the store's lock for the moment it takes, as skein runs cancel does:
while a worker holds the store, actions are refused with the process that
holds it, since only that process may change the store. To act on runs while
a worker runs, serve the dashboard from the worker itself (webui.New with
worker.Client(); see the README's Dashboard section, or run
go run ./examples/quickstart -ui 127.0.0.1:8089). Started before the local
store exists, it says so and waits for the store to appear (a worker or the
quickstart creates it), then serves it.

Examples:
  skein ui
  skein ui -addr 127.0.0.1:9000 -open
  skein -stack orders ui`

// uiCmd is "skein ui": the dashboard.
func uiCmd(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("skein ui", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.storeFlags(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `host:port` (port 0 picks a free one)")
	open := fs.Bool("open", false, "open the dashboard in a browser")
	public := fs.Bool("public", false, "allow an -addr other machines can reach (the dashboard has no login)")
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: skein ui %s\n\n%s\n\nFlags:\n", uiUsage, uiHelp)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(e.stdout)
		return 0
	case err == nil && len(pos) > 0:
		err = fmt.Errorf("unexpected argument %q", pos[0])
	case err == nil:
		if err := checkUIAddr(*addr, *public); err != nil {
			fmt.Fprintf(e.stderr, "skein ui: %s\n", safeLines(err.Error()))
			return 2
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "skein ui: %s\n\n", safeLines(err.Error()))
		usage(e.stderr)
		return 2
	}
	if err := e.serveUI(ctx, *addr, *public, *open); err != nil {
		fmt.Fprintf(e.stderr, "skein ui: %s\n", safeLines(err.Error()))
		return 1
	}
	return 0
}

// checkUIAddr refuses an address other machines can reach unless public.
func checkUIAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q is not host:port: %v", addr, err)
	}
	if public || loopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("-addr %s listens on %s, which other machines can reach; the dashboard has no login and its "+
		"actions cancel runs and resume hooks, so it serves on 127.0.0.1 unless you pass -public as well", addr, shown)
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveUI opens the store and serves the dashboard until ctx ends.
func (e *env) serveUI(ctx context.Context, addr string, public, open bool) error {
	e.actions, e.waitStore = true, true
	if err := e.open(ctx); err != nil {
		return err
	}
	defer func() { _ = e.w.Close(); e.w = nil }()
	cfg := webui.Config{Client: e.client} // it logs to the Client's Logger
	if !public {
		cfg.Hosts = webui.LoopbackHosts()
	}
	if e.remote.set() && e.sqs != nil {
		cfg.DeadLetters = dashboardDLQ{&dlq.Redriver{Q: e.sqs, W: e.w, WorkURL: e.remote.queueURL}}
	}
	wh, err := webui.New(cfg)
	if err != nil {
		return err
	}
	var h http.Handler = wh
	if e.act != nil {
		h = e.act.serve(wh, cfg.Hosts)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	if host, port, _ := net.SplitHostPort(ln.Addr().String()); public && (host == "::" || host == "0.0.0.0") {
		url = "http://localhost:" + port
	}
	reach := "local only"
	if public {
		reach = "reachable from other machines (-public): anyone who can reach it can act on runs"
	}
	note := ""
	if e.act != nil {
		note = fmt.Sprintf("skein ui reads %s without holding it: a worker may run on it meanwhile. Each action takes the store "+
			"for a moment, and is refused while a worker (or the quickstart) holds it: act from the worker's own dashboard then\n", e.db)
	}
	// One write: whoever reads the first line has the rest too.
	fmt.Fprintf(e.stdout, "serving on %s — %s\nstore: %s\n%s", url, reach, e.where(), note)
	if open {
		openBrowser(url, e.stderr)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// openBrowser asks the desktop to open url; failing that, it says so.
func openBrowser(url string, stderr io.Writer) {
	name, args := "xdg-open", []string{url}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", url}
	}
	if err := exec.Command(name, args...).Start(); err != nil {
		fmt.Fprintf(stderr, "skein ui: could not open a browser (%s): %v; open %s yourself\n", name, err, url)
	}
}

// uiSummary is the ui command's line in the main usage.
const uiSummary = "serve the dashboard on 127.0.0.1: runs, timelines, live streams, actions"
