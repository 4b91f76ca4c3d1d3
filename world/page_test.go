package world_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/skeinflow/skein/world"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	type pos struct {
		Seq int64  `json:"s"`
		ID  string `json:"i"`
	}
	c := world.EncodeCursor("events:"+runID, pos{Seq: 42, ID: "x"})
	if c == "" {
		t.Fatal("EncodeCursor returned an empty cursor")
	}
	var got pos
	if err := world.DecodeCursor("events:"+runID, c, &got); err != nil || got != (pos{42, "x"}) {
		t.Fatalf("DecodeCursor = %+v, %v", got, err)
	}
	var n int64
	if err := world.DecodeCursor("runs", world.EncodeCursor("runs", int64(7)), &n); err != nil || n != 7 {
		t.Fatalf("DecodeCursor of an int position = %d, %v", n, err)
	}
}

func TestCursorInvalid(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, kind, cursor string
	}{
		{"foreign kind", "events:" + runID, world.EncodeCursor("runs", 1)},
		{"another run's events", "events:" + runID, world.EncodeCursor("events:"+otherID, 1)},
		{"kind prefix", "events", world.EncodeCursor("events:"+runID, 1)},
		{"not base64", "runs", "%%%"},
		{"padded base64", "runs", base64.URLEncoding.EncodeToString([]byte(`{"k":"runs","p":12}`))},
		{"not JSON", "runs", b64("hello")},
		{"JSON array", "runs", b64(`[1]`)},
		{"no position", "runs", b64(`{"k":"runs"}`)},
		{"position of the wrong type", "runs", b64(`{"k":"runs","p":"x"}`)},
		{"empty", "runs", ""},
	} {
		var n int64
		err := world.DecodeCursor(tc.kind, tc.cursor, &n)
		if !errors.Is(err, world.ErrInvalid) {
			t.Errorf("DecodeCursor(%s): %v, want ErrInvalid", tc.name, err)
		}
	}
}

func TestEncodeCursorPanicsOnUnencodable(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("EncodeCursor of a channel did not panic")
		}
	}()
	world.EncodeCursor("runs", make(chan int))
}

func TestEffectiveLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want int }{
		{-5, world.DefaultPageLimit}, {0, world.DefaultPageLimit}, {1, 1}, {250, 250},
		{world.MaxPageLimit, world.MaxPageLimit}, {world.MaxPageLimit + 1, world.MaxPageLimit},
	} {
		if got := (world.Pagination{Limit: tc.in}).EffectiveLimit(); got != tc.want {
			t.Errorf("EffectiveLimit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
