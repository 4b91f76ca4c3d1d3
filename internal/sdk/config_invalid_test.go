package sdk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// Every refusal of a Worker's, a Processor's or a Client's Config is a
// typed error (world.ErrInvalid) naming the field as the user wrote it; a
// negative duration is refused, not taken for unset.
func TestConfigRefusalsAreInvalid(t *testing.T) {
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	reg := sdk.NewRegistry()
	long := strings.Repeat("v", 200)
	for _, c := range []struct {
		name string
		cfg  sdk.WorkerConfig
		want string
	}{
		{"no world", sdk.WorkerConfig{Registry: reg}, "worker: Config.World is required"},
		{"negative visibility", sdk.WorkerConfig{World: lw, Registry: reg, Visibility: -time.Second}, "worker: Config.Visibility is negative (-1s)"},
		{"negative stop timeout", sdk.WorkerConfig{World: lw, Registry: reg, StopTimeout: -time.Second}, "worker: Config.StopTimeout is negative (-1s)"},
		{"negative concurrency", sdk.WorkerConfig{World: lw, Registry: reg, Concurrency: -1}, "worker: Config.Concurrency is negative (-1)"},
		{"long version", sdk.WorkerConfig{World: lw, Registry: reg, Version: long}, "worker: Config.Version"},
		{"negative engine option", sdk.WorkerConfig{World: lw, Registry: reg, Engine: sdk.EngineOptions{StepLeaseTTL: -time.Second}}, "Engine.StepLeaseTTL is negative"},
	} {
		w, err := sdk.NewWorker(c.cfg)
		if err == nil {
			t.Errorf("%s: NewWorker = %v, want an error", c.name, w)
			continue
		}
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewWorker: %v, want an ErrInvalid saying %q", c.name, err, c.want)
		}
	}
	if _, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw}); !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "worker: Config.Registry is required") {
		t.Errorf("NewProcessor without a Registry: %v, want an ErrInvalid naming Config.Registry", err)
	}
	for _, cc := range []sdk.ClientConfig{{}, {World: lw, Version: long}} {
		if _, err := sdk.NewClient(cc); !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "client: Config.") {
			t.Errorf("NewClient(%+v): %v, want an ErrInvalid naming the client's Config field", cc, err)
		}
	}
}
