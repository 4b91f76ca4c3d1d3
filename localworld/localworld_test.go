package localworld

import (
	"path/filepath"
	"testing"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"
)

// suiteLimits are small enough for the conformance suite to reach.
var suiteLimits = world.Limits{MaxEvents: 1000, MaxPayload: 64 << 10, MaxStreamBytes: 256 << 10, MaxStreams: 16, MaxRunBytes: 4 << 20}

// TestConformance runs the World conformance suite on every mode: memory,
// and each file format with each sync policy.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			worldtest.Run(t, worldtest.Options{New: func(t *testing.T) worldtest.Subject {
				clock := new(worldtest.Clock)
				cfg := Config{Sync: m.sync, Limits: suiteLimits, spillWindow: m.spillWindow}
				if m.durable {
					cfg.Path = filepath.Join(t.TempDir(), "world.db")
				}
				w, err := Open(cfg, knobs.WithNow(clock.Now))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return worldtest.Subject{World: w, Consumer: w, Clock: clock}
			}})
		})
	}
}
