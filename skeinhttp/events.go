package skeinhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// defaultHeartbeat is how long a stream may stay silent before a comment
// line is sent.
const defaultHeartbeat = 15 * time.Second

// EventsConfig configures the Server-Sent Events handler.
type EventsConfig struct {
	// Client is what the handler subscribes through (required). The
	// stream's failures go to its Logger.
	Client *client.Client
	// ShowTokens shows webhook tokens as they are (default: redacted).
	ShowTokens bool
}

// Events is the Server-Sent Events handler (see the package doc).
type Events struct {
	cfg       EventsConfig
	logger    *slog.Logger
	heartbeat time.Duration
	// retry, when positive, is sent as the stream's reconnection delay
	// ("retry:"), in milliseconds to the client.
	retry time.Duration
}

// NewEvents returns the Server-Sent Events handler of cfg.Client's
// subscriptions. Options are for Skein's own packages and tests.
func NewEvents(cfg EventsConfig, opts ...knobs.Option) (*Events, error) {
	if cfg.Client == nil {
		return nil, errors.New("skeinhttp: EventsConfig.Client is required")
	}
	k := knobs.Apply(opts)
	if k.Heartbeat < 0 || k.Retry < 0 {
		return nil, errors.New("skeinhttp: heartbeat and retry must not be negative")
	}
	h := &Events{cfg: cfg, logger: sdk.ClientLogger(cfg.Client), heartbeat: k.Heartbeat, retry: k.Retry}
	if h.heartbeat == 0 {
		h.heartbeat = defaultHeartbeat
	}
	return h, nil
}

// options reads the subscription the request asks for.
func options(r *http.Request) (client.SubscribeOptions, error) {
	q := r.URL.Query()
	o := client.SubscribeOptions{RunID: q.Get("run"), After: q.Get("after")}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		o.After = id
	}
	for _, v := range q["types"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Types = append(o.Types, world.EventType(t))
			}
		}
	}
	switch s := q.Get("snapshot"); s {
	case "", "0", "false":
	case "1", "true":
		o.Snapshot = true
	default:
		return o, fmt.Errorf("%w: snapshot=%q: want 1 or 0", world.ErrInvalid, s)
	}
	return o, nil
}

// ServeHTTP streams the subscription the request asks for.
func (h *Events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the event stream is read with GET", http.StatusMethodNotAllowed)
		return
	}
	o, err := options(r)
	if err != nil {
		failBefore(w, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if ended, err := h.ended(ctx, o); err != nil {
		failBefore(w, err)
		return
	} else if ended {
		w.WriteHeader(http.StatusNoContent) // EventSource stops reconnecting
		return
	}
	sub, err := h.cfg.Client.Subscribe(ctx, o)
	if err != nil {
		failBefore(w, err)
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives a server's WriteTimeout
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	s := &stream{w: w, rc: rc, redact: !h.cfg.ShowTokens}
	if h.retry > 0 {
		s.line("retry", fmt.Sprint(h.retry.Milliseconds()))
	}
	s.comment("ok")
	if err := s.flush(); err != nil {
		return
	}
	h.pump(ctx, s, sub, o)
}

// ended reports whether a resumed one-run stream is already past the run's
// end and rest (sdk.AtRest).
func (h *Events) ended(ctx context.Context, o client.SubscribeOptions) (bool, error) {
	if o.RunID == "" || o.After == "" {
		return false, nil
	}
	seq, err := world.ParseRunCursor(o.RunID, o.After)
	if err != nil {
		return false, err
	}
	run, err := sdk.ClientWorld(h.cfg.Client).GetRun(ctx, &world.GetRunParams{RunID: o.RunID})
	if err != nil || seq < run.LastSeq {
		return false, err
	}
	return sdk.AtRest(ctx, h.cfg.Client, o.RunID)
}

type next struct {
	u   *client.Update
	err error
}

// pump writes the subscription's updates and the heartbeats until the
// subscription ends or the client goes.
func (h *Events) pump(ctx context.Context, s *stream, sub *client.Subscription, o client.SubscribeOptions) {
	ch := make(chan next)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer sub.Close() // before wg.Wait: it ends the reader's Next
	wg.Go(func() {
		defer close(ch)
		for {
			u, err := sub.Next()
			select {
			case ch <- next{u, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	beat := time.NewTicker(h.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			s.comment("heartbeat")
		case n, ok := <-ch:
			if !ok {
				return
			}
			switch {
			case errors.Is(n.err, io.EOF):
				s.message("end", "", []byte("{}"))
			case n.err != nil:
				if ctx.Err() != nil {
					return
				}
				h.logger.LogAttrs(ctx, slog.LevelWarn, "skeinhttp: subscription failed", slog.String("run", o.RunID), slog.Any("err", n.err))
				b, _ := json.Marshal(map[string]any{"status": world.Status(n.err), "error": n.err.Error()})
				s.message("error", "", b)
			default:
				if err := s.update(n.u); err != nil {
					h.logger.LogAttrs(ctx, slog.LevelWarn, "skeinhttp: update not encoded", slog.Any("err", err))
					return
				}
			}
			beat.Reset(h.heartbeat)
		}
		if s.flush() != nil || s.err != nil {
			return
		}
	}
}

// failBefore answers a request whose stream could not start: the status
// the error stands for, and its message on one line.
func failBefore(w http.ResponseWriter, err error) {
	status := world.Status(err)
	if status < 400 {
		status = http.StatusInternalServerError
	}
	http.Error(w, strings.ReplaceAll(err.Error(), "\n", " "), status)
}
