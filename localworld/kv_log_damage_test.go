package localworld

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// A file cut short (truncated, copied incompletely) is damage, not a torn
// write: a crash leaves the file's size, and a closed store's header says
// how long its log was. Open refuses it as ErrCorrupt, never as a torn
// tail, RepairTornTail does not touch it, and a read-only Open refuses it
// too.
func TestLogCutShort(t *testing.T) {
	t.Parallel()
	closed, crashed, _, _ := logWorlds(t)
	_, recs := commitRecords(t, closed)
	last := recs[len(recs)-1]
	cases := []struct {
		name string
		from string
		size int64
		want string
	}{
		{"crashed/inside-last-record", crashed, (last.off + last.end) / 2, "ends inside its last record"},
		{"crashed/inside-last-header", crashed, last.off + 5, "ends inside its last record"},
		{"closed/inside-last-record", closed, (last.off + last.end) / 2, "store was closed with"},
		{"closed/all-but-one-byte", closed, last.end - 1, "store was closed with"},
		{"closed/at-last-record", closed, last.off, "store was closed with"},
		{"closed/at-a-middle-record", closed, recs[2].off, "store was closed with"},
		{"closed/in-the-middle", closed, (recs[1].off + recs[1].end) / 2, "store was closed with"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := copyFile(t, c.from)
			if err := os.Truncate(path, c.size); err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []Config{{}, {RepairTornTail: true}, {ReadOnly: true}} {
				err := wantOpenRefused(t, path, ErrCorrupt, cfg)
				if errors.Is(err, ErrTornTail) || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), c.want) ||
					strings.Contains(err.Error(), "RepairTornTail") {
					t.Fatalf("Open(%+v): %v, want ErrCorrupt saying the file was cut short (%q), without advice to repair it", cfg, err, c.want)
				}
			}
		})
	}

	// Damage to the last record of a closed store is not a torn write.
	t.Run("closed/last-record-damaged", func(t *testing.T) {
		t.Parallel()
		path := copyFile(t, closed)
		b, _ := os.ReadFile(path)
		b[last.end-3] ^= 0x10
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cfg := range []Config{{}, {RepairTornTail: true}} {
			err := wantOpenRefused(t, path, ErrCorrupt, cfg)
			if errors.Is(err, ErrTornTail) || !strings.Contains(err.Error(), "damage, not an interrupted write") {
				t.Fatalf("Open(%+v): %v, want damage, not a torn tail", cfg, err)
			}
		}
	})
}

// An empty file (touch) is a new store: read-only it holds nothing, and
// Open makes a store in its place, keeping its permissions and the
// symbolic link that names it.
func TestOpenEmptyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "touched.skein")
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.skein")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(Config{Path: link, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of an empty file: %v", err)
	}
	defer ro.Close()
	if p, err := ro.ListRuns(context.Background(), nil); err != nil || len(p.Items) != 0 {
		t.Fatalf("read-only ListRuns of an empty file: %v, %v", p, err)
	}
	w, err := Open(Config{Path: link})
	if err != nil {
		t.Fatalf("Open of an empty file: %v", err)
	}
	id := newRun(t, w, "wf")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link: %v, %v", fi, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the store's permissions: %v, %v, want 0640", fi.Mode(), err)
	}
	if _, err := ro.GetRun(context.Background(), &world.GetRunParams{RunID: id}); err != nil {
		t.Fatalf("the reader opened on the empty file does not follow the new store: %v", err)
	}
	w = mustOpen(t, Config{Path: path})
	if _, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: id}); err != nil {
		t.Fatalf("reopened: %v", err)
	}
}
