package handler

import (
	"log/slog"
	"strings"
	"testing"
	"time"

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
	c := Config{}.withDefaults()
	var engineDefaults worker.EngineOptions
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"TimeBudgetMargin", c.TimeBudgetMargin, 10 * time.Second},
		{"ReturnMargin", c.ReturnMargin, 500 * time.Millisecond},
		{"Concurrency", c.Concurrency, 10},
		{"MaxMalformedReceives", c.MaxMalformedReceives, 10},
		{"WebhookTimeout", c.WebhookTimeout, 30 * time.Second},
		{"MaxRequestBody", c.MaxRequestBody, int64(1 << 20)},
		{"Malformed", c.Malformed, DeadLetter},
		// The engine's settings are left zero: the engine applies its own.
		{"Engine", c.Engine, engineDefaults},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, want %v", d.name, d.got, d.want)
		}
	}
	if c.Logger == nil || c.Now == nil {
		t.Errorf("Logger or Now has no default")
	}
}

// TestConfigValidate checks that every out-of-range setting is refused
// with an error naming it.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	base := Config{World: stubWorld{}, Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		name         string
		set          func(*Config)
		needRegistry bool
		want         string // "" for valid
	}{
		{"defaults", func(*Config) {}, true, ""},
		{"no World", func(c *Config) { c.World = nil }, false, "no World"},
		{"no Registry where needed", func(c *Config) { c.Registry = nil }, true, "no Registry"},
		{"no Registry where not", func(c *Config) { c.Registry = nil }, false, ""},
		{"negative ReturnMargin", func(c *Config) { c.ReturnMargin = -time.Second }, false, "ReturnMargin is negative"},
		{"margin under return", func(c *Config) { c.TimeBudgetMargin, c.ReturnMargin = time.Second, 2*time.Second }, false, "TimeBudgetMargin (1s) must exceed ReturnMargin (2s)"},
		{"Engine.BudgetMargin set", func(c *Config) { c.Engine.BudgetMargin = 3 * time.Second }, false, "Engine.BudgetMargin is set (3s): set TimeBudgetMargin instead"},
		{"negative Concurrency", func(c *Config) { c.Concurrency = -1 }, false, "negative Concurrency"},
		{"unknown Malformed", func(c *Config) { c.Malformed = 7 }, false, "unknown Malformed policy 7"},
		{"negative MaxMalformedReceives", func(c *Config) { c.MaxMalformedReceives = -1 }, false, "MaxMalformedReceives is negative"},
		{"negative WebhookTimeout", func(c *Config) { c.WebhookTimeout = -time.Second }, false, "WebhookTimeout is negative"},
		{"negative MaxRequestBody", func(c *Config) { c.MaxRequestBody = -1 }, false, "MaxRequestBody is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.set(&cfg)
			err := cfg.withDefaults().validate(c.needRegistry)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "handler: invalid config: ")):
				t.Fatalf("validate = %v, want a handler: invalid config error naming %q", err, c.want)
			}
		})
	}
}
