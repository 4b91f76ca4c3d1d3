package sealmark

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestMarkUnmark: the marker round-trips every execution context the
// engine writes, and is recognised; one that is not an object is left
// alone.
func TestMarkUnmark(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		`{"rootRunId":"wrun_1"}`: `{"rootRunId":"wrun_1"}`,
		`{"a":1,"b":{"c":[2]}}`:  `{"a":1,"b":{"c":[2]}}`,
		`{}`:                     "",
		`{ "a":1 }`:              `{"a":1 }`,
	} {
		m := Mark(json.RawMessage(in))
		if !json.Valid(m) || !Marked(m) {
			t.Errorf("Mark(%q) = %s: not a marked JSON object", in, m)
		}
		got, ok := Unmark(m)
		if !ok || string(got) != want {
			t.Errorf("Unmark(Mark(%q)) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if m := Mark(json.RawMessage(`[1]`)); string(m) != `[1]` || Marked(m) {
		t.Errorf("Mark of an array = %s", m)
	}
	for _, ec := range []string{``, `{"skein.sealed":1}`, `{"skein.sealed":2x}`, `{"x":1,"skein.sealed":2}`} {
		if Marked(json.RawMessage(ec)) {
			t.Errorf("Marked(%q)", ec)
		}
	}
}

// TestSealed: a run is sealed by its marker or by a key-record input,
// and Check's error matches world.ErrKeyUnavailable naming the key.
func TestSealed(t *testing.T) {
	env := json.RawMessage(`{"skein.sealed":2,"kid":"k1","dk":"AA==","ct":"AA=="}`)
	for _, c := range []struct {
		input, ec string
		sealed    bool
	}{
		{`1`, ``, false},
		{`{"card":"4242"}`, `{"rootRunId":"r"}`, false},
		{`"skein.sealed"`, ``, false},
		{`{"x":{"skein.sealed":1}}`, ``, false},
		{string(env), ``, true},
		{`{"cents":1}`, string(Mark(nil)), true},
		{`{"skein.sealeD":2,"kid":"k1"}`, string(Mark(nil)), true},
	} {
		if _, got := Sealed(json.RawMessage(c.input), json.RawMessage(c.ec)); got != c.sealed {
			t.Errorf("Sealed(%s, %s) = %v", c.input, c.ec, got)
		}
	}
	err := Check("wrun_1", env, nil)
	var ke *KeylessError
	if run, key, ok := KeyOf(fmt.Errorf("load: %w", err)); !errors.Is(err, world.ErrKeyUnavailable) || !errors.As(err, &ke) || !ok || run != "wrun_1" || key != "k1" {
		t.Fatalf("Check = %v; KeyOf = %q, %q, %v", err, run, key, ok)
	}
}

// TestKeyID: a payload is sealed when it has an envelope's shape (a known
// version, a key ID, ciphertext), whatever its spacing; anything else is
// data, and Describe shows it as it is.
func TestKeyID(t *testing.T) {
	for payload, want := range map[string]string{
		`{"skein.sealed":2,"kid":"k1","ct":"AAAA"}`:              "k1",
		` {"skein.sealed":1,"kid":"k2","dk":"AA==","ct":"AAAA"}`: "k2",
		`{"skein.sealed":3,"kid":"k1","ct":"AAAA"}`:              "",
		`{"skein.sealed":2,"ct":"AAAA"}`:                         "",
		`{"skein.sealed":2,"kid":"k1"}`:                          "",
		`{"skein.sealed":2,"kid":"k1","ct":"not base64!"}`:       "",
		`{"skein.sealed":2,"kid":"k1","dk":7,"ct":"AAAA"}`:       "",
		`{"card":"4242"}`: "",
		`"skein.sealed"`:  "",
		``:                "",
	} {
		got, ok := KeyID([]byte(payload))
		if got != want || ok != (want != "") {
			t.Errorf("KeyID(%s) = %q, %v; want %q", payload, got, ok, want)
		}
		d := Describe([]byte(payload))
		if want != "" && d != `[encrypted with key "`+want+`"; no key to decrypt it]` || want == "" && d != payload {
			t.Errorf("Describe(%s) = %q", payload, d)
		}
	}
}
