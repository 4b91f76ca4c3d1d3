package localworld

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
)

// wantOpenRefused opens path, expects target naming the file, and checks
// that the file's bytes did not change.
func wantOpenRefused(t *testing.T, path string, target error, cfg Config) error {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = path
	if cfg.LockTimeout == 0 {
		cfg.LockTimeout = 100 * time.Millisecond
	}
	w, openErr := Open(cfg)
	if openErr == nil {
		_ = w.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(openErr, target) {
		t.Fatalf("Open: %v, want %v", openErr, target)
	}
	if !strings.Contains(openErr.Error(), path) {
		t.Errorf("error does not name the file: %v", openErr)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the failed Open modified the file (%d bytes before, %d after)", len(before), len(after))
	}
	t.Logf("refused as expected: %v", openErr)
	return openErr
}

func TestOpenForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	wantOpenRefused(t, garbage, ErrCorrupt, Config{})
	wantOpenRefused(t, garbage, ErrCorrupt, Config{ReadOnly: true})

	if _, err := Open(Config{Path: dir}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open(directory): %v", err)
	}
	if _, err := Open(Config{Path: filepath.Join(dir, "missing", "world.db")}); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

// TestOpenLocked: an Open of a file another World holds waits for
// LockTimeout, then fails with ErrLocked. The waits are judged by their
// lower bounds, which hold however busy the machine is: one LockTimeout
// longer than the default shows that the configured one is kept; the
// upper bound is only there to catch a wait that never ends.
func TestOpenLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	w := mustOpen(t, Config{Path: path})
	for _, timeout := range []time.Duration{150 * time.Millisecond, DefaultLockTimeout + 500*time.Millisecond} {
		start := time.Now()
		_, err := Open(Config{Path: path, LockTimeout: timeout})
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "gave up after "+timeout.String()) {
			t.Fatalf("second Open with LockTimeout %s: %v, want ErrLocked naming the file and the timeout", timeout, err)
		}
		if took := time.Since(start); took < timeout || took > timeout+30*time.Second {
			t.Fatalf("second Open with LockTimeout %s gave up after %s", timeout, took)
		}
	}
	// The holder is unaffected, and the lock goes with Close.
	newRun(t, w, "wf")
	_ = w.Close()
	w2 := mustOpen(t, Config{Path: path, LockTimeout: time.Second})
	if p, err := w2.ListRuns(context.Background(), nil); err != nil || len(p.Items) != 1 {
		t.Fatalf("ListRuns after reopen: %+v, %v", p, err)
	}
}

func TestCreateLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "world.db")
	_ = mustOpen(t, Config{Path: path}, knobs.WithFileMode(0o640))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "world.db" {
		t.Fatalf("directory holds %v", entries)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := (*Config)(nil).WithDefaults()
	if c.compactMin != defaultCompactMin || c.Sync != SyncEveryCommit || c.DedupeWindow != DefaultDedupeWindow || c.now == nil || c.fileMode != defaultFileMode || c.Logger == nil || c.LockTimeout != DefaultLockTimeout {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []struct {
		cfg  Config
		opts []knobs.Option
	}{{Config{Sync: 7}, nil}, {Config{}, []knobs.Option{knobs.WithFileMode(os.ModeDir | 0o700)}}} {
		if _, err := Open(bad.cfg, bad.opts...); err == nil || !strings.Contains(err.Error(), "invalid config") {
			t.Errorf("Open(%+v): %v", bad, err)
		}
	}
	if SyncBatch.String() != "batch" || SyncPolicy(9).String() != "SyncPolicy(9)" {
		t.Error("SyncPolicy.String")
	}
}
