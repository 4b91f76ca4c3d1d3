package world

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// ID prefixes, one per entity kind.
const (
	PrefixRun   = "wrun_"
	PrefixStep  = "step_"
	PrefixHook  = "hook_"
	PrefixWait  = "wait_"
	PrefixEvent = "evnt_"
	PrefixMsg   = "msg_"
)

// IDSource mints prefixed, monotonic ULIDs: IDs minted by one source sort in
// the order they were minted, even within one millisecond. It is safe for
// concurrent use. The zero value is not usable; call NewIDSource.
type IDSource struct {
	mu      sync.Mutex
	now     func() time.Time
	entropy *ulid.MonotonicEntropy
	lastMS  uint64 // timestamp of the newest ID: the clock may step back
}

// NewIDSource returns an IDSource reading time from now (time.Now when nil)
// and randomness from r (crypto/rand when nil).
func NewIDSource(now func() time.Time, r io.Reader) *IDSource {
	if now == nil {
		now = time.Now
	}
	if r == nil {
		r = rand.Reader
	}
	return &IDSource{now: now, entropy: ulid.Monotonic(r, 0)}
}

// New returns prefix followed by a fresh ULID.
func (s *IDSource) New(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Never go back in time: a wall clock stepping back (NTP) would otherwise
	// mint IDs sorting before earlier ones.
	ms := max(ulid.Timestamp(s.now()), s.lastMS)
	id, err := ulid.New(ms, s.entropy)
	if err != nil {
		// The entropy of this millisecond is exhausted: borrow the next one,
		// which keeps the order (a fresh random ULID would not).
		ms++
		if id, err = ulid.New(ms, s.entropy); err != nil {
			id = ulid.Make()
		}
	}
	s.lastMS = ms
	return prefix + id.String()
}

// ValidateID reports whether id is prefix followed by a well-formed ULID.
func ValidateID(prefix, id string) error {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return fmt.Errorf("%w: id %q does not start with %q", ErrInvalid, id, prefix)
	}
	if _, err := ulid.ParseStrict(rest); err != nil {
		return fmt.Errorf("%w: id %q: %v", ErrInvalid, id, err)
	}
	return nil
}
