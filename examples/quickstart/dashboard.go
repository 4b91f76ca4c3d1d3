package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/worker"
)

// serveDashboard serves Skein's dashboard on addr over the worker's own
// store, until ctx ends. The worker's client writes that store, so the
// dashboard's actions (cancel, resume a hook, rerun) work while the worker
// runs; `skein ui` on the same store reads it, but its actions are refused
// while the worker holds the store. It returns the dashboard's URL.
func serveDashboard(ctx context.Context, wk *worker.Worker, addr string) (string, error) {
	cfg := webui.Config{Client: wk.Client()}
	if host, _, err := net.SplitHostPort(addr); err == nil && isLoopback(host) {
		cfg.Hosts = webui.LoopbackHosts() // refuse pages of other sites resolving to 127.0.0.1
	}
	ui, err := webui.New(cfg)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/", ui)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once ctx ends
	go func() {
		<-ctx.Done()
		_ = srv.Close() // also ends the live stream feeds
	}()
	return "http://" + ln.Addr().String(), nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
