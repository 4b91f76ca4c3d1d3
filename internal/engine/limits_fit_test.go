package engine

import (
	"encoding/json"
	"strings"
	"testing"

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
			if n := storedErrorBytes(t, d); n > limit || errorBytes(d) != n {
				t.Errorf("%s, type %q: cut to %d bytes as stored (errorBytes %d), over the limit of %d", name, typ, n, errorBytes(d), limit)
			}
			if !strings.HasSuffix(d.Message, "(cut to fit the run's payload limit)") {
				t.Errorf("%s: message %q not cut", name, d.Message[max(0, len(d.Message)-60):])
			}
		}
	}
}
