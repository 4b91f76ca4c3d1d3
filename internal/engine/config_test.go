package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// stubWorld is a World for configuration checks, which never call it.
type stubWorld struct{ world.World }

// TestConfigDefaults checks that a zero Config takes each setting's one
// default, and that the settings the World defaults too (the leases) take
// the World's: a step_started that names no lease and the engine's agree.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"StepLeaseTTL", c.StepLeaseTTL, world.DefaultStepLease},
		{"RunLeaseTTL", c.RunLeaseTTL, world.DefaultRunLease},
		{"InlineConcurrency", c.InlineConcurrency, 16},
		{"RunPollInterval", c.RunPollInterval, time.Second},
		{"EventPollInterval", c.EventPollInterval, time.Second},
		{"BudgetMargin", c.BudgetMargin, 5 * time.Second},
		{"MaxInvocation", c.MaxInvocation, 10 * time.Minute},
		{"MaxSlice", c.MaxSlice, 30 * time.Second},
		{"LeaseRetryDelay", c.LeaseRetryDelay, 100 * time.Millisecond},
		{"MaxQueueDelay", c.MaxQueueDelay, 15 * time.Minute},
		{"MaxDeliveries", c.MaxDeliveries, 48},
		{"ReplaceAfter", c.ReplaceAfter, 3},
		{"MaxInterruptions", c.MaxInterruptions, 10},
		{"Linger", c.Linger, 250 * time.Millisecond},
		{"HoldRetryDelay", c.HoldRetryDelay, time.Minute},
		{"HoldRetryLimit", c.HoldRetryLimit, time.Hour},
		{"VersionRetryDelay", c.VersionRetryDelay, time.Second},
		{"VersionRetryLimit", c.VersionRetryLimit, time.Minute},
		{"LogCacheBytes", c.LogCacheBytes, 32 << 20},
		{"BackgroundDelay", c.BackgroundDelay, time.Duration(0)},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, want %v", d.name, d.got, d.want)
		}
	}
	if c.Logger == nil || c.Now == nil || c.EncodeError == nil {
		t.Errorf("Logger, Now or EncodeError has no default")
	}
	// A limit given below its delay's default is raised to it.
	if c := (Config{Options: Options{HoldRetryDelay: 2 * time.Hour}}).withDefaults(); c.HoldRetryLimit != 2*time.Hour {
		t.Errorf("HoldRetryLimit = %s with HoldRetryDelay 2h, want 2h", c.HoldRetryLimit)
	}
}

// TestConfigValidate checks that every out-of-range setting is refused
// with an error naming it, and that the defaults pass.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	base := Config{World: stubWorld{}, Registry: newRegistry()}
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no World", func(c *Config) { c.World = nil }, "no World"},
		{"no Registry", func(c *Config) { c.Registry = nil }, "no Registry"},
		{"negative RunLeaseTTL", func(c *Config) { c.RunLeaseTTL = -time.Second }, "Engine.RunLeaseTTL is negative"},
		{"negative StepLeaseTTL", func(c *Config) { c.StepLeaseTTL = -time.Second }, "StepLeaseTTL is negative"},
		{"negative BudgetMargin", func(c *Config) { c.BudgetMargin = -time.Second }, "BudgetMargin is negative"},
		{"negative BackgroundDelay", func(c *Config) { c.BackgroundDelay = -time.Second }, "BackgroundDelay is negative"},
		{"negative InlineConcurrency", func(c *Config) { c.InlineConcurrency = -1 }, "InlineConcurrency is negative"},
		{"negative MaxDeliveries", func(c *Config) { c.MaxDeliveries = -1 }, "MaxDeliveries is negative"},
		{"negative MaxInterruptions", func(c *Config) { c.MaxInterruptions = -1 }, "MaxInterruptions is negative"},
		{"hold limit under delay", func(c *Config) { c.HoldRetryDelay, c.HoldRetryLimit = time.Hour, time.Minute }, "Engine.HoldRetryLimit (1m0s) is less than Engine.HoldRetryDelay (1h0m0s)"},
		{"version limit under delay", func(c *Config) { c.VersionRetryDelay, c.VersionRetryLimit = time.Minute, time.Second }, "VersionRetryLimit (1s) is less than VersionRetryDelay (1m0s)"},
		{"negative MaxSlice", func(c *Config) { c.MaxSlice = -time.Second }, "MaxSlice is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.set(&cfg)
			err := cfg.withDefaults().validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "engine: invalid config: ")):
				t.Fatalf("validate = %v, want an engine: invalid config error naming %q", err, c.want)
			}
		})
	}
}

// TestConfigKnobs checks that the knobs Skein's wiring and tests pass to New
// set the engine's internal settings, that a knob left zero leaves the
// setting as the Config has it, and that a negative BackgroundDelay means
// none.
func TestConfigKnobs(t *testing.T) {
	t.Parallel()
	at := time.Unix(42, 0)
	c := Config{Linger: time.Second, MaxQueueDelay: time.Minute}.withKnobs(
		knobs.WithLinger(-1), knobs.WithRunPollInterval(3*time.Millisecond), knobs.WithEventPollInterval(4*time.Millisecond),
		knobs.WithBackgroundDelay(-1), knobs.WithBudgetMargin(7*time.Second), knobs.WithMaxInvocation(time.Hour),
		knobs.WithVersionRetry(2*time.Second, 0), knobs.WithNow(func() time.Time { return at }))
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"Linger", c.Linger, time.Duration(-1)},
		{"MaxQueueDelay", c.MaxQueueDelay, time.Minute},
		{"RunPollInterval", c.RunPollInterval, 3 * time.Millisecond},
		{"EventPollInterval", c.EventPollInterval, 4 * time.Millisecond},
		{"BackgroundDelay", c.BackgroundDelay, time.Duration(0)},
		{"BudgetMargin", c.BudgetMargin, 7 * time.Second},
		{"MaxInvocation", c.MaxInvocation, time.Hour},
		{"VersionRetryDelay", c.VersionRetryDelay, 2 * time.Second},
		{"VersionRetryLimit", c.VersionRetryLimit, time.Duration(0)},
	} {
		if d.got != d.want {
			t.Errorf("%s = %v with knobs, want %v", d.name, d.got, d.want)
		}
	}
	if c.Now == nil || !c.Now().Equal(at) {
		t.Error("WithNow did not set the clock")
	}
	if c := (Config{}).withKnobs(knobs.WithBackgroundDelay(50 * time.Millisecond)); c.BackgroundDelay != 50*time.Millisecond {
		t.Errorf("BackgroundDelay = %s with a 50ms knob", c.BackgroundDelay)
	}
}
