package engine

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// lines records the log lines a workflow prints through Context.LogLine,
// as the workflow package's logger does.
type lines struct {
	mu  sync.Mutex
	got map[string]int
}

func (l *lines) say(c *Context, msg string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(msg))
	if c.LogLine(h.Sum64()) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got[msg]++
	}
}

// TestLogLinesAcrossRebuild: a session whose commit is refused (the step
// appends a payload to its own run while it runs) rebuilds the workflow.
// The lines it printed before are not printed again, whether the rebuilt
// code passes them while applying the log or after it (the step's result,
// delivered again); a line on another path the rebuilt code takes (the
// payload now comes before the step's result) is printed.
func TestLogLinesAcrossRebuild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wf   func(l *lines) func(c *Context, in json.RawMessage) (json.RawMessage, error)
		once []string
	}{
		{"another path", func(l *lines) func(c *Context, in json.RawMessage) (json.RawMessage, error) {
			return func(c *Context, in json.RawMessage) (json.RawMessage, error) {
				l.say(c, "start")
				hk := c.Hook("tok-"+c.RunID(), nil, false)
				c.Await(hk.Registered)
				l.say(c, "hook registered")
				f := c.Step("poke", mustJSON("tok-"+c.RunID()))
				c.Await(func() bool { return f.Done() || hk.Len() > 0 })
				if hk.Len() > 0 {
					l.say(c, "payload first")
					p, _ := hk.Payload(0)
					return p, nil
				}
				l.say(c, "step first")
				r, _ := f.Result()
				return r, nil
			}
		}, []string{"start", "hook registered", "payload first"}},
		{"the same path", func(l *lines) func(c *Context, in json.RawMessage) (json.RawMessage, error) {
			return func(c *Context, in json.RawMessage) (json.RawMessage, error) {
				l.say(c, "start")
				hk := c.Hook("tok-"+c.RunID(), nil, false)
				c.Await(hk.Registered)
				f := c.Step("poke", mustJSON("tok-"+c.RunID()))
				c.Await(f.Done)
				l.say(c, "after step")
				c.Await(func() bool { return hk.Len() > 0 })
				l.say(c, "payload")
				p, _ := hk.Payload(0)
				return p, nil
			}
		}, []string{"start", "after step", "payload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{msgs: map[string]int{}}
			h := newHarness(t, nil, Config{Logger: slog.New(rec), EventPollInterval: time.Hour})
			l := &lines{got: map[string]int{}}
			h.reg.step("poke", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				var token string
				_ = json.Unmarshal(in, &token)
				if _, err := ResumeHook(ctx, h.w, time.Now, token, mustJSON("payload")); err != nil {
					return nil, err
				}
				return mustJSON("stepped"), nil
			})
			h.reg.wf("w", tc.wf(l))
			h.work(1, nil)
			id := h.start("w", nil)
			if run := h.wait(id); string(run.Output) != `"payload"` {
				t.Fatalf("output %s, want the payload", run.Output)
			}
			if n := rec.count("engine: commit refused"); n < 1 {
				t.Fatalf("%d rebuilds, want at least 1", n)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, msg := range tc.once {
				if l.got[msg] != 1 {
					t.Errorf("%q printed %d times, want once (all: %v)", msg, l.got[msg], l.got)
				}
			}
			// A line the code passed once, before the refused commit, prints at most once.
			if l.got["step first"] > 1 {
				t.Errorf("\"step first\" printed %d times", l.got["step first"])
			}
		})
	}
}
