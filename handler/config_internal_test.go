package handler

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// stubWorld is a World for configuration checks, which never call it.
type stubWorld struct{ world.World }

// TestConfigDefaults checks each setting's default; the engine's are left
// to the engine (internal/engine's TestConfigDefaults).
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.settle(nil)
	var engineDefaults worker.EngineOptions
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"TimeBudgetMargin", c.TimeBudgetMargin, 10 * time.Second},
		{"the return margin", c.returnMargin, 500 * time.Millisecond},
		{"Concurrency", c.Worker.Concurrency, 10},
		{"the malformed receives' bound", c.maxMalformedReceives, 10},
		{"the webhook timeout", c.webhookTimeout, 30 * time.Second},
		{"MaxRequestBody", c.MaxRequestBody, int64(1 << 20)},
		{"Malformed", c.Malformed, DeadLetter},
		// The engine's settings are left zero: the engine applies its own.
		{"Engine", c.Worker.Engine, engineDefaults},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, want %v", d.name, d.got, d.want)
		}
	}
	if c.Worker.Logger == nil || c.now == nil || c.retryDelay != nil {
		t.Errorf("Logger or the clock has no default, or a retry delay is set")
	}
	// The knobs set what is no field of Config.
	at := time.Unix(7, 0)
	k := Config{}.settle([]knobs.Option{knobs.WithReturnMargin(time.Second), knobs.WithMaxMalformedReceives(3),
		knobs.WithWebhookTimeout(time.Minute), knobs.WithNow(func() time.Time { return at }),
		knobs.WithRetryDelay(func(int) time.Duration { return time.Hour })})
	if k.returnMargin != time.Second || k.maxMalformedReceives != 3 || k.webhookTimeout != time.Minute ||
		!k.now().Equal(at) || k.retryDelay == nil || k.retryDelay(1) != time.Hour {
		t.Errorf("knobs not applied: %+v", k)
	}
}

// TestConfigValidate checks that every out-of-range setting is refused
// with an error naming it.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	base := Config{Worker: worker.Config{World: stubWorld{}, Registry: reg, Logger: slog.New(slog.DiscardHandler)}}
	for _, c := range []struct {
		name         string
		set          func(*settings)
		needRegistry bool
		want         string // "" for valid
	}{
		{"defaults", func(*settings) {}, true, ""},
		{"no World", func(c *settings) { c.Worker.World = nil }, false, "no Worker.World"},
		{"no Registry where needed", func(c *settings) { c.Worker.Registry = nil }, true, "no Worker.Registry"},
		{"no Registry where not", func(c *settings) { c.Worker.Registry = nil }, false, ""},
		{"negative return margin", func(c *settings) { c.returnMargin = -time.Second }, false, "the return margin is negative"},
		{"margin under return", func(c *settings) { c.TimeBudgetMargin, c.returnMargin = time.Second, 2*time.Second }, false, "TimeBudgetMargin (1s) must exceed the return margin (2s)"},
		{"negative Concurrency", func(c *settings) { c.Worker.Concurrency = -1 }, false, "negative Worker.Concurrency"},
		{"unknown Malformed", func(c *settings) { c.Malformed = 7 }, false, "unknown Malformed policy 7"},
		{"negative malformed receives", func(c *settings) { c.maxMalformedReceives = -1 }, false, "the malformed receives' bound is negative"},
		{"negative webhook timeout", func(c *settings) { c.webhookTimeout = -time.Second }, false, "the webhook timeout is negative"},
		{"negative MaxRequestBody", func(c *settings) { c.MaxRequestBody = -1 }, false, "MaxRequestBody is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base.settle(nil)
			c.set(&cfg)
			err := cfg.validate(c.needRegistry)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "handler: invalid config: ")):
				t.Fatalf("validate = %v, want a handler: invalid config error naming %q", err, c.want)
			}
		})
	}
}
