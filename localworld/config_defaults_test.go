package localworld

import (
	"testing"

	"github.com/skeinflow/skein/internal/configtest"
)

// TestConfigLeaseDefaults checks that the run lease and the visibility
// default to the World's one default, and that a negative one is refused
// rather than quietly replaced (the check every World shares).
func TestConfigLeaseDefaults(t *testing.T) {
	t.Parallel()
	configtest.LeaseDefaults(t, "localworld: invalid config: ", func(given configtest.Leases) (configtest.Leases, error) {
		c := (&Config{DefaultRunLeaseTTL: given.RunLease, DefaultVisibility: given.Visibility}).WithDefaults()
		return configtest.Leases{RunLease: c.DefaultRunLeaseTTL, Visibility: c.DefaultVisibility}, c.validate()
	})
}
