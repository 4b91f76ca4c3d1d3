package dynamoworld

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestConfigLeaseDefaults checks that the run lease and the visibility
// default to the World's one default, and that a negative one is refused
// rather than quietly replaced.
func TestConfigLeaseDefaults(t *testing.T) {
	t.Parallel()
	c := (&Config{}).WithDefaults()
	if c.DefaultRunLeaseTTL != world.DefaultRunLease || c.DefaultVisibility != world.DefaultVisibility {
		t.Errorf("defaults: run lease %s, visibility %s; want world's %s and %s",
			c.DefaultRunLeaseTTL, c.DefaultVisibility, world.DefaultRunLease, world.DefaultVisibility)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative visibility", Config{DefaultVisibility: -time.Second}, "negative DefaultVisibility -1s"},
		{"negative run lease", Config{DefaultRunLeaseTTL: -time.Second}, "negative DefaultRunLeaseTTL -1s"},
	} {
		err := tc.cfg.WithDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "dynamoworld: invalid config: ") {
			t.Errorf("%s: validate = %v, want a dynamoworld: invalid config error naming %q", tc.name, err, tc.want)
		}
	}
}
