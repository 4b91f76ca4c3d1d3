package dynamoworld

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/configtest"
	"github.com/skeinflow/skein/world"
)

// TestConfigLeaseDefaults checks that a request naming no run lease or
// visibility gets the world package's one default, and that a negative one
// is refused rather than quietly replaced (the check every World shares).
func TestConfigLeaseDefaults(t *testing.T) {
	t.Parallel()
	w := &store{}
	configtest.LeaseDefaults(t, func(given configtest.Leases) (configtest.Leases, error) {
		ttl, err := w.leaseTTL(&world.RunLeaseParams{RunID: "r", Owner: "o", TTL: given.RunLease})
		vis, verr := receiveVisibility(&world.ReceiveParams{Visibility: given.Visibility})
		return configtest.Leases{RunLease: ttl, Visibility: vis}, errors.Join(err, verr)
	})
}

// A refused Config is a typed error (world.ErrInvalid) naming the field;
// a negative DedupeWindow is refused, not taken for unset.
func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{DedupeWindow: -time.Second}, "negative DedupeWindow -1s"},
		{Config{Retention: -time.Second}, "negative Retention -1s"},
	} {
		err := c.cfg.WithDefaults().validate()
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "dynamoworld: invalid config: ") || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("validate(%+v) = %v, want an ErrInvalid saying %q", c.cfg, err, c.want)
		}
	}
}
