package localworld

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestLogRecordRemoved: a whole commit record spliced out of the log (the
// local counterpart of a DynamoDB commit item deleted) is ErrCorrupt:
// every record carries its sequence number under its CRC, so the record
// after the hole has the wrong one, and a closed store's header says how
// long its log was. Without the header's help (the file padded back to its
// length with zeros) the sequence numbers alone catch it. A record removed
// from the end of a store that was not closed looks like a commit that was
// never written and is not caught (RELIABILITY.md).
func TestLogRecordRemoved(t *testing.T) {
	t.Parallel()
	closed, crashed, _, _ := logWorlds(t)
	for _, tc := range []struct {
		name, from string
		pad        bool
		want       string
	}{
		{"closed/spliced", closed, false, "cut short"},
		{"closed/spliced-and-padded", closed, true, "want seq"},
		{"crashed/spliced", crashed, false, "want seq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, recs := commitRecords(t, tc.from)
			if len(recs) < 3 {
				t.Fatalf("%d commit records, want at least 3", len(recs))
			}
			path := copyFile(t, tc.from)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mid := recs[1]
			out := slices.Concat(b[:mid.off], b[mid.end:])
			if tc.pad {
				out = append(out, make([]byte, len(b)-len(out))...)
			}
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			err = wantOpenRefused(t, path, ErrCorrupt, Config{})
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want ErrCorrupt saying %q", err, tc.want)
			}
		})
	}
}
