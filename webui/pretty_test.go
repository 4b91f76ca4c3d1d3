package webui

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

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

// TestPrettyClipsHugePayloads: a payload over maxShownPayload is shown in
// part, with its size, not whole (a run page shows each payload up to three
// times).
func TestPrettyClipsHugePayloads(t *testing.T) {
	t.Parallel()
	huge := `"` + strings.Repeat("x", 5<<20) + `"`
	got := pretty([]byte(huge))
	if len(got) > maxShownPayload+200 || !strings.Contains(got, "5242882 bytes in all") {
		t.Fatalf("pretty of 5 MB = %d bytes ending %q", len(got), got[max(0, len(got)-80):])
	}
}

// TestTimeFilterWithSeconds: the created from/to filters take what a
// browser's datetime-local input sends, with or without seconds.
func TestTimeFilterWithSeconds(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2026-11-24T10:24", "2026-11-24T10:24:48", "2026-11-24T10:24:48Z"} {
		q, err := parseListQuery(url.Values{"from": {v}}, time.UTC)
		if err != nil || q.From.IsZero() {
			t.Errorf("from=%s: %v", v, err)
		}
	}
}
