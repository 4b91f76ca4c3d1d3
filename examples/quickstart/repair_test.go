package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A store whose last record is incomplete (a crash in the middle of a write)
// is refused with advice, and -repair-torn-tail drops that record and
// finishes the order.
func TestQuickstartRepairTornTail(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "qs.db")
	args := []string{"-db", db, "-sleep", "100ms", "-approve-after", "30ms"}
	if _, code := runQuickstart(t, args...); code != 0 {
		t.Fatalf("first run exited %d", code)
	}
	// What a kill in the middle of the next write leaves: a record's header
	// and the start of its payload, then the zeros of the space allocated
	// ahead of it.
	rec := binary.LittleEndian.AppendUint32([]byte("SKR1"), 1000)
	rec = binary.LittleEndian.AppendUint32(rec, 0xdeadbeef)
	rec = binary.LittleEndian.AppendUint64(rec, 1<<40)
	rec = append(rec, bytes.Repeat([]byte("x"), 100)...)
	rec = append(rec, make([]byte, 1<<12)...)
	f, err := os.OpenFile(db, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(rec); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	if code := run(ctx, args, &out, &errs); code != 1 {
		t.Fatalf("run on a torn store exited %d, want 1; stdout:\n%s", code, out.String())
	}
	if !strings.Contains(errs.String(), "-repair-torn-tail") {
		t.Fatalf("stderr does not point at -repair-torn-tail:\n%s", errs.String())
	}
	if after, _ := os.Stat(db); after.Size() != fi.Size() {
		t.Fatalf("the refused store changed size: %d, want %d", after.Size(), fi.Size())
	}

	out2, code := runQuickstart(t, append(args, "-repair-torn-tail")...)
	if code != 0 {
		t.Fatalf("repaired run exited %d:\n%s", code, out2)
	}
	if !strings.Contains(out2, "SKN-1001") {
		t.Fatalf("repaired run did not report the shipped order:\n%s", out2)
	}
}
