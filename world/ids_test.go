package world_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

func TestIDSourceFormat(t *testing.T) {
	t.Parallel()
	src := world.NewIDSource(nil, nil)
	before := time.Now().Truncate(time.Millisecond)
	for _, prefix := range []string{world.PrefixRun, world.PrefixStep, world.PrefixHook, world.PrefixWait, world.PrefixEvent, world.PrefixMsg} {
		id := src.New(prefix)
		if err := world.ValidateID(prefix, id); err != nil {
			t.Fatalf("New(%q) = %q: %v", prefix, id, err)
		}
		at, err := idTime(id)
		if err != nil || at.Before(before) || at.After(time.Now()) {
			t.Fatalf("IDTime(%q) = %v, %v; want about %v", id, at, err, before)
		}
	}
}

func TestIDSourceMonotonicConcurrent(t *testing.T) {
	t.Parallel()
	src := world.NewIDSource(nil, nil)
	const goroutines, per = 8, 2000
	got := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range per {
				got[g] = append(got[g], src.New(world.PrefixEvent))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for g, ids := range got {
		// Each goroutine mints sequentially, so its IDs must sort in order.
		if !slices.IsSorted(ids) {
			t.Fatalf("goroutine %d minted IDs out of order", g)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate ID %s", id)
			}
			seen[id] = true
		}
	}
}

func TestIDSourceMonotonicClock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	src := world.NewIDSource(now, nil)
	var ids []string
	for range 1000 { // one millisecond
		ids = append(ids, src.New("x_"))
	}
	set(clock.Add(-time.Second)) // the wall clock steps back
	for range 10 {
		ids = append(ids, src.New("x_"))
	}
	set(clock.Add(2 * time.Second))
	ids = append(ids, src.New("x_"))
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatal("IDs minted with a stuck or backward clock are not strictly increasing")
	}
}

func TestIDSourceEntropyOverflow(t *testing.T) {
	t.Parallel()
	// Each fresh entropy is all ones and each increment is 1, so every second
	// ID of a millisecond overflows.
	pattern := append(bytes.Repeat([]byte{0xff}, 10), 0, 0, 0, 1)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	src := world.NewIDSource(func() time.Time { return at }, &cycle{b: pattern})
	var ids []string
	for range 5 {
		ids = append(ids, src.New("x_"))
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("IDs minted across an entropy overflow are not strictly increasing: %v", ids)
	}
	if ts, _ := idTime(ids[4]); ts.Sub(at) > 10*time.Millisecond {
		t.Fatalf("overflow moved the timestamp to %v, far from the clock %v", ts, at)
	}
}

func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prefix, id string
		ok         bool
	}{
		{world.PrefixRun, runID, true},
		{world.PrefixStep, stepID, true},
		{world.PrefixRun, "wrun_01arz3ndektsv4rrffq69g5fav", true}, // ULIDs are case-insensitive
		{world.PrefixEvent, "evnt_00000000000000000000000001", true},
		{world.PrefixRun, stepID, false},
		{world.PrefixRun, "", false},
		{world.PrefixRun, "wrun_", false},
		{world.PrefixRun, "wrun_01ARZ3NDEKTSV4RRFFQ69G5FA", false},   // 25 characters
		{world.PrefixRun, "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAVV", false}, // 27 characters
		{world.PrefixRun, "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAU", false},  // U is not Crockford base32
		{world.PrefixRun, "wrun_81ARZ3NDEKTSV4RRFFQ69G5FAV", false},  // timestamp overflow
		{world.PrefixRun, "WRUN_01ARZ3NDEKTSV4RRFFQ69G5FAV", false},
		{world.PrefixRun, " wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV", false},
	} {
		err := world.ValidateID(tc.prefix, tc.id)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, world.ErrInvalid)) {
			t.Errorf("ValidateID(%q, %q) = %v, want ok=%v (ErrInvalid otherwise)", tc.prefix, tc.id, err, tc.ok)
		}
	}
}

// cycle reads b over and over.
type cycle struct {
	b []byte
	i int
}

func (c *cycle) Read(p []byte) (int, error) {
	for n := range p {
		p[n] = c.b[c.i%len(c.b)]
		c.i++
	}
	return len(p), nil
}

// idTime returns the creation time a prefixed ULID encodes.
func idTime(id string) (time.Time, error) {
	_, rest, _ := strings.Cut(id, "_")
	u, err := ulid.ParseStrict(rest)
	if err != nil {
		return time.Time{}, err
	}
	return ulid.Time(u.Time()), nil
}
