// Package configtest holds the checks every World's Config must pass, for
// the tests of localworld and dynamoworld (test files only): written once,
// they cannot drift apart.
package configtest

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// Leases are a World config's lease settings: its DefaultRunLeaseTTL and
// DefaultVisibility.
type Leases struct {
	RunLease, Visibility time.Duration
}

// Defaulted builds a World's Config with the leases given (the rest zero),
// applies its WithDefaults and returns the leases it then holds and what
// its validation returns.
type Defaulted func(given Leases) (Leases, error)

// LeaseDefaults checks that the run lease and the visibility default to the
// world package's one default, and that a negative one is refused rather
// than quietly replaced, with an error that starts with prefix (such as
// "localworld: invalid config: ") and names the setting.
func LeaseDefaults(t *testing.T, prefix string, build Defaulted) {
	t.Helper()
	c, _ := build(Leases{}) // a zero config may lack what validation wants (clients)
	if c.RunLease != world.DefaultRunLease || c.Visibility != world.DefaultVisibility {
		t.Errorf("defaults: run lease %s, visibility %s; want world's %s and %s",
			c.RunLease, c.Visibility, world.DefaultRunLease, world.DefaultVisibility)
	}
	for _, tc := range []struct {
		name  string
		given Leases
		want  string
	}{
		{"negative visibility", Leases{Visibility: -time.Second}, "negative DefaultVisibility -1s"},
		{"negative run lease", Leases{RunLease: -time.Second}, "negative DefaultRunLeaseTTL -1s"},
	} {
		_, err := build(tc.given)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: validate = %v, want an error %q... naming %q", tc.name, err, prefix, tc.want)
		}
	}
}
