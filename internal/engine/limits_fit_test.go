package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// storedErrorBytes measures d as world.Apply does a recorded error: its
// text as a JSON round trip returns it, its details.
func storedErrorBytes(t *testing.T, d *world.ErrorData) int {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back world.ErrorData
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return len(back.Type) + len(back.Message) + len(back.Stack) + len(back.Code) + len(back.Details)
}

// An error cut to fit the payload limit fits it as stored: a cut never
// splits a rune (stored as U+FFFD, longer), and bytes that are not UTF-8
// count as the U+FFFD they become.
func TestFitErrorFitsAsStored(t *testing.T) {
	const limit = 1 << 10
	for name, msg := range map[string]string{
		"two-byte runes":   strings.Repeat("é", limit),
		"three-byte runes": "x" + strings.Repeat("日", limit),
		"bytes not UTF-8":  strings.Repeat("a\xff", limit/2),
		"ascii":            strings.Repeat("a", 2*limit),
	} {
		for _, typ := range []string{"", "E", "Ee"} {
			d := fitError(&world.ErrorData{Type: typ, Message: msg, Code: "C"}, limit)
			if n := storedErrorBytes(t, d); n > limit || world.ErrorSize(d) != n {
				t.Errorf("%s, type %q: cut to %d bytes as stored (world.ErrorSize %d), over the limit of %d", name, typ, n, world.ErrorSize(d), limit)
			}
			if !strings.HasSuffix(d.Message, "(cut to fit the run's payload limit)") {
				t.Errorf("%s: message %q not cut", name, d.Message[max(0, len(d.Message)-60):])
			}
		}
	}
}

// trickyError is an error whose recorded size differs from its bytes in
// memory everywhere it can: text that is not ASCII or not UTF-8, details
// spaced and with HTML characters (stored compact and escaped), nested
// causes and a list of joined errors.
func trickyError() *world.ErrorData {
	leaf := &world.ErrorData{Type: "Leaf\xff", Message: "日本 \xc3 <&>", Details: json.RawMessage(`{ "a" : "<b>" }`)}
	return &world.ErrorData{
		Type: "Täter", Message: "bad \xff\xfe byte é", Stack: "at x\n\tat \u2028y", Code: "C\xe2\x80",
		Details: json.RawMessage("[ 1,\n 2, \"&\" ]"),
		Cause:   &world.ErrorData{Message: "cause", Cause: leaf, Details: json.RawMessage(`"\u2028 &"`)},
		Errors:  []*world.ErrorData{leaf, {Message: "ß", Errors: []*world.ErrorData{{Details: json.RawMessage(` { } `)}}}},
	}
}

// applyPayloadLimit reports whether world.Apply refuses a run_failed
// recording d under a payload limit of limit bytes.
func applyPayloadLimit(t *testing.T, d *world.ErrorData, limit int) bool {
	t.Helper()
	ev := world.Event{RunID: world.NewIDSource(nil, nil).New(world.PrefixRun), Data: &world.RunFailed{Error: d}}
	_, err := world.Apply(world.State{Limits: world.Limits{MaxPayload: limit}}, ev, time.Now())
	var le *world.LimitError
	if errors.As(err, &le) {
		return true
	}
	if !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("apply: %v, want a limit refusal or not found", err)
	}
	return false
}

// The engine cuts an error to fit a run's payload limit as world.Apply
// counts it: an error that fits is kept whole and Apply takes it, an error
// that does not is cut to one Apply takes, on every limit around its size.
func TestFitErrorAgreesWithApply(t *testing.T) {
	d := trickyError()
	size := world.ErrorSize(d)
	if !applyPayloadLimit(t, d, size-1) || applyPayloadLimit(t, d, size) {
		t.Fatalf("world.Apply does not count the error's %d bytes", size)
	}
	for limit := size - 80; limit <= size+2; limit++ {
		f := fitError(d, limit)
		if refused := applyPayloadLimit(t, f, limit); refused {
			t.Fatalf("limit %d (error of %d bytes): world.Apply refuses the error fitError kept (%d bytes as the engine counts)",
				limit, size, world.ErrorSize(f))
		}
		if whole := f == d; whole != (limit >= size) {
			t.Errorf("limit %d (error of %d bytes): kept whole %v, want %v", limit, size, whole, limit >= size)
		}
	}
}
