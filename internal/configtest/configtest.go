// Package configtest holds the checks every World's Config must pass, for
// the tests of localworld and dynamoworld (test files only): written once,
// they cannot drift apart.
package configtest

import (
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// Leases are the run lease and the visibility of a World's requests.
type Leases struct {
	RunLease, Visibility time.Duration
}

// Defaulted returns what a World makes of a RunLeaseParams naming
// given.RunLease as its TTL and a ReceiveParams naming given.Visibility:
// the lease and visibility it uses, and the error it returns for either.
type Defaulted func(given Leases) (Leases, error)

// LeaseDefaults checks that a request naming no run lease or visibility
// gets the world package's one default (a World has no default of its
// own), and that a negative one is refused with world.ErrInvalid rather than
// quietly replaced.
func LeaseDefaults(t *testing.T, build Defaulted) {
	t.Helper()
	c, err := build(Leases{})
	if err != nil || c.RunLease != world.DefaultRunLease || c.Visibility != world.DefaultVisibility {
		t.Errorf("defaults: run lease %s, visibility %s, %v; want world's %s and %s",
			c.RunLease, c.Visibility, err, world.DefaultRunLease, world.DefaultVisibility)
	}
	if c, err := build(Leases{RunLease: time.Minute, Visibility: 2 * time.Minute}); err != nil ||
		c.RunLease != time.Minute || c.Visibility != 2*time.Minute {
		t.Errorf("named: run lease %s, visibility %s, %v; want the request's 1m0s and 2m0s", c.RunLease, c.Visibility, err)
	}
	for _, tc := range []struct {
		name  string
		given Leases
	}{
		{"negative visibility", Leases{Visibility: -time.Second}},
		{"negative run lease", Leases{RunLease: -time.Second}},
	} {
		if _, err := build(tc.given); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("%s: %v, want world.ErrInvalid", tc.name, err)
		}
	}
}
