package knobs

import (
	"io"
	"time"
)

// Option sets one or more knobs.
type Option func(*Set)

// Set holds every knob; a constructor reads the ones it knows.
type Set struct {
	Host
	Worker
	World
}

// Apply returns the Set the options build, in order (a later option wins);
// nil options are skipped.
func Apply(opts []Option) Set {
	var s Set
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// Host holds what every constructor may take: the clock and the source of
// randomness.
type Host struct {
	// Now replaces time.Now (nil: time.Now).
	Now func() time.Time
	// Entropy replaces crypto/rand for IDs and tokens (nil: crypto/rand).
	Entropy io.Reader
}

// WithNow sets the clock.
func WithNow(now func() time.Time) Option { return func(s *Set) { s.Now = now } }

// WithEntropy sets the source of randomness.
func WithEntropy(r io.Reader) Option { return func(s *Set) { s.Entropy = r } }
