package webui

import "testing"

// TestPretty: JSON is indented and Go's HTML escapes are undone inside
// strings only, other escapes kept; text that is not JSON is kept.
func TestPretty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`"\u003cscript\u003e"`, `"<script>"`},
		{`{"a":"x \u0026 y","b":[1,2]}`, "{\n  \"a\": \"x & y\",\n  \"b\": [\n    1,\n    2\n  ]\n}"},
		{`"\\u003c"`, `"\\u003c"`},
		{`"\"\u003e\n"`, `"\">\n"`},
		{`"\u00e9"`, `"\u00e9"`},
		{`not json <b>`, `not json <b>`},
		{``, ``},
		{`{"skein.sealed":1,"kid":"k1","ct":"AAAA"}`, `[encrypted with key "k1"; no key to decrypt it]`},
	} {
		if got := pretty([]byte(tc.in)); got != tc.want {
			t.Errorf("pretty(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
