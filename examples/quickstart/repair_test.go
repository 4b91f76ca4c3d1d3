package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A store whose last record was cut short (a crash in the middle of a write)
// is refused with advice, and -repair-torn-tail drops that record and
// finishes the order.
func TestQuickstartRepairTornTail(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "qs.db")
	args := []string{"-db", db, "-sleep", "100ms", "-approve-after", "30ms"}
	if _, code := runQuickstart(t, args...); code != 0 {
		t.Fatalf("first run exited %d", code)
	}
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(db, fi.Size()-1); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	if code := run(ctx, args, &out, &errs); code != 1 {
		t.Fatalf("run on a torn store exited %d, want 1; stdout:\n%s", code, out.String())
	}
	if !strings.Contains(errs.String(), "-repair-torn-tail") {
		t.Fatalf("stderr does not point at -repair-torn-tail:\n%s", errs.String())
	}
	if after, _ := os.Stat(db); after.Size() != fi.Size()-1 {
		t.Fatalf("the refused store changed size: %d, want %d", after.Size(), fi.Size()-1)
	}

	out2, code := runQuickstart(t, append(args, "-repair-torn-tail")...)
	if code != 0 {
		t.Fatalf("repaired run exited %d:\n%s", code, out2)
	}
	if !strings.Contains(out2, "SKN-1001") {
		t.Fatalf("repaired run did not report the shipped order:\n%s", out2)
	}
}
