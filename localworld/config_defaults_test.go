package localworld

import (
	"errors"
	"testing"

	"github.com/skeinflow/skein/internal/configtest"
	"github.com/skeinflow/skein/world"
)

// TestConfigLeaseDefaults checks that a request naming no run lease or
// visibility gets the world package's one default, and that a negative one
// is refused rather than quietly replaced (the check every World shares).
func TestConfigLeaseDefaults(t *testing.T) {
	t.Parallel()
	w, err := open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	configtest.LeaseDefaults(t, func(given configtest.Leases) (configtest.Leases, error) {
		ttl, err := w.leaseParams(&world.RunLeaseParams{RunID: "r", Owner: "o", TTL: given.RunLease})
		vis, verr := receiveVisibility(&world.ReceiveParams{Visibility: given.Visibility})
		return configtest.Leases{RunLease: ttl, Visibility: vis}, errors.Join(err, verr)
	})
}
