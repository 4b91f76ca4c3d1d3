package localworld

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// A refused Config is a typed error (world.ErrInvalid) naming the field;
// a negative duration is refused, not taken for unset.
func TestConfigRefusals(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{LockTimeout: -time.Second}, "negative LockTimeout -1s"},
		{Config{DedupeWindow: -time.Second}, "negative DedupeWindow -1s"},
		{Config{Sync: SyncPolicy(9)}, "unknown Sync policy 9"},
	} {
		w, err := Open(c.cfg)
		if err == nil {
			w.Close()
			t.Errorf("Open(%+v) succeeded, want %q", c.cfg, c.want)
			continue
		}
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "localworld: invalid config: "+c.want) {
			t.Errorf("Open(%+v) = %v, want an ErrInvalid saying %q", c.cfg, err, c.want)
		}
	}
}
