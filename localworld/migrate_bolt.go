package localworld

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/skeinflow/skein/world"
	bolt "go.etcd.io/bbolt"
)

// ErrBoltFormat is returned by Open for a store in the bbolt format, which
// this version no longer runs on (it could return changed data without an
// error when the file was damaged: bbolt keeps no checksum of its data).
// MigrateBolt, or `skein store migrate`, copies its runs to a log-format
// store. It matches ErrCorrupt too, for callers that only test for that.
var ErrBoltFormat = errors.New("localworld: the store is in the bbolt format, which this version no longer runs on")

// boltFormatError is ErrBoltFormat for one file, naming the way out.
type boltFormatError struct{ path string }

func (e *boltFormatError) Error() string {
	return fmt.Sprintf("localworld: open %s: a store in the bbolt format, which this version no longer runs on "+
		"(bbolt keeps no checksum of its data, so a damaged file could be read as other data). "+
		"Copy its runs to a new log-format store with: skein store migrate -from %s -to NEW.skein "+
		"(or localworld.MigrateBolt), then use the new file (the old one is left untouched)", e.path, e.path)
}

func (e *boltFormatError) Is(target error) bool {
	return target == ErrBoltFormat || target == ErrCorrupt
}

// MigrateReport is what MigrateBolt copied, and what it left out.
type MigrateReport struct {
	// Runs is the number of runs copied, Entries the number of keys
	// copied over every bucket (runs, events, indexes, queue messages...).
	Runs, Entries int
	// Skipped says what was left out and why, one line each, the first
	// maxMigrateNotes of SkippedCount.
	Skipped      []string
	SkippedCount int
	// DamagedRuns are the runs some skipped entry belonged to: check them
	// (skein runs show) before relying on them.
	DamagedRuns []string
}

// maxMigrateNotes bounds MigrateReport.Skipped.
const maxMigrateNotes = 100

func (r *MigrateReport) skip(runID, format string, args ...any) {
	r.SkippedCount++
	if len(r.Skipped) < maxMigrateNotes {
		r.Skipped = append(r.Skipped, fmt.Sprintf(format, args...))
	}
	if runID != "" && len(r.DamagedRuns) < maxMigrateNotes && !slices.Contains(r.DamagedRuns, runID) {
		r.DamagedRuns = append(r.DamagedRuns, runID)
	}
}

// MigrateBolt copies the store in the bbolt format at from to a new
// log-format store at to, which must not exist, and leaves from untouched.
// It never trusts the bbolt file: both meta pages and the file's size are
// checked first (a failure is ErrCorrupt naming the damage), every bucket
// is read under a guard that turns bbolt's panics and memory faults on a
// damaged page into a note, and every entry is checked before it is copied
// (a record must decode and name the key it is stored under, an index entry
// must be empty, an ID must be one); what fails is skipped and reported.
// bbolt keeps no checksum of its data, so a value damaged into another
// well-formed value cannot be detected: the report's DamagedRuns are the
// runs known to have lost something. The new store is written under a
// temporary name, synced, read back and checked, and only then linked to
// to. A store in use by a process holding it fails with ErrLocked.
func MigrateBolt(from, to string) (*MigrateReport, error) {
	if _, err := os.Lstat(to); err == nil {
		return nil, fmt.Errorf("localworld: migrate to %s: the file exists; name a new file", to)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("localworld: migrate to %s: %w", to, err)
	}
	fi, err := os.Stat(from)
	switch {
	case err != nil:
		return nil, fmt.Errorf("localworld: migrate %s: %w", from, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("localworld: migrate %s: not a regular file", from)
	}
	if err := checkFormat(from); err == nil {
		return nil, fmt.Errorf("localworld: migrate %s: already a log-format store; nothing to migrate", from)
	} else if !errors.Is(err, ErrBoltFormat) {
		return nil, err
	}
	cfg := (&Config{Path: from}).WithDefaults()
	if err := checkFile(from, cfg); err != nil {
		return nil, err
	}
	mem := newMemStore()
	rep := &MigrateReport{}
	if err := readBolt(from, cfg, mem, rep); err != nil {
		return nil, err
	}
	marker, _ := mem.buckets[bMeta].Get(keyItem(formatKey))
	if !bytes.Equal(marker.val(), formatV1) {
		return nil, fmt.Errorf("%w: migrate %s: a bbolt file but not a localworld store of layout %q (found %q)", ErrCorrupt, from, formatV1, marker.val())
	}
	if err := writeMigrated(mem, to); err != nil {
		return nil, err
	}
	return rep, nil
}

// readBolt reads every bucket of the bbolt file into mem, checking each
// entry (migrateEntry). Each bucket is read in its own guarded read
// transaction, so damage in one costs only what could not be read of it.
func readBolt(path string, cfg *Config, mem *memStore, rep *MigrateReport) error {
	var db *bolt.DB
	err := guard(path, func() error {
		var err error
		db, err = bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: cfg.LockTimeout})
		return err
	})
	if err != nil {
		return openError(path, cfg, err)
	}
	defer db.Close()
	known := map[string]bool{}
	for b, name := range bucketNames {
		known[name] = true
		n := 0
		err := guard(path, func() error {
			return db.View(func(tx *bolt.Tx) error {
				bk := tx.Bucket([]byte(name))
				if bk == nil {
					return nil // a bucket a newer layout added
				}
				return bk.ForEach(func(k, v []byte) error {
					n++
					migrateEntry(mem, rep, bucketID(b), k, v)
					return nil
				})
			})
		})
		if err != nil {
			rep.skip("", "bucket %s: the rest of it after %d entries: %v", name, n, err)
		}
	}
	err = guard(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if !known[string(name)] {
					rep.skip("", "bucket %q: not one of a localworld store's", name)
				}
				return nil
			})
		})
	})
	if err != nil {
		rep.skip("", "the list of buckets: %v", err)
	}
	return nil
}

// migrateEntry checks one entry and copies it to mem, or notes why not.
func migrateEntry(mem *memStore, rep *MigrateReport, b bucketID, k, v []byte) {
	if v == nil {
		rep.skip("", "bucket %s, key %q: a nested bucket, which no localworld store has", b, k)
		return
	}
	runID, err := checkEntry(b, k, v)
	if err != nil {
		rep.skip(runID, "bucket %s, key %q: %v", b, k, err)
		return
	}
	mem.buckets[b].ReplaceOrInsert(ownedItem(k, v))
	rep.Entries++
	if b == bRuns {
		rep.Runs++
	}
}

// checkEntry checks what can be checked of an entry without a checksum:
// the key's size, that a record decodes and names the key it is stored
// under, that an index entry is empty and an ID is one. It returns the run
// the entry belongs to, when its key says.
func checkEntry(b bucketID, k, v []byte) (string, error) {
	if err := checkKey(k); err != nil {
		return "", err
	}
	var runID string
	switch b {
	case bEvents, bSteps, bStepsByRun, bHooksByRun, bWaits, bStreams, bStreamChunks:
		id, _, ok := readStr(k)
		if !ok || world.ValidateID(world.PrefixRun, id) != nil {
			return "", errors.New("the key does not start with a run ID")
		}
		runID = id
	case bRuns, bLeases:
		runID = string(k)
		if err := world.ValidateID(world.PrefixRun, runID); err != nil {
			return "", fmt.Errorf("the key is not a run ID: %v", err)
		}
	}
	switch b {
	case bRunsByTime, bRunsByName, bRunsByStatus, bRunsByNameStatus, bEventsByCorr, bStepsByRun,
		bHooksByTime, bHooksByRun, bQueueVisible, bQueueIdemExpiry:
		if len(v) != 0 {
			return runID, fmt.Errorf("an index entry holds %d bytes, it holds none", len(v))
		}
	case bRunIdem:
		if err := world.ValidateID(world.PrefixRun, string(v)); err != nil {
			return runID, fmt.Errorf("the value is not a run ID: %v", err)
		}
	case bHookTokens:
		if err := world.ValidateID(world.PrefixHook, string(v)); err != nil {
			return runID, fmt.Errorf("the value is not a hook ID: %v", err)
		}
	case bRuns:
		var r world.Run
		if err := json.Unmarshal(v, &r); err != nil {
			return runID, fmt.Errorf("the run does not decode: %v", err)
		}
		if r.RunID != runID {
			return runID, fmt.Errorf("the run's ID is %q", r.RunID)
		}
	case bEvents:
		var ev world.Event
		if err := json.Unmarshal(v, &ev); err != nil {
			return runID, fmt.Errorf("the event does not decode: %v", err)
		}
		if want := newKey().str(ev.RunID).seq(ev.Seq); !bytes.Equal(k, want) {
			return runID, fmt.Errorf("the event is run %s seq %d, stored under another key", ev.RunID, ev.Seq)
		}
	case bSteps, bHooks, bWaits, bLeases, bQueueMsgs, bQueueIdem, bStreams:
		if err := json.Unmarshal(v, recordOf(b)); err != nil || len(v) == 0 || v[0] != '{' {
			return runID, fmt.Errorf("the record does not decode: %v", err)
		}
	case bMeta:
		if bytes.Equal(k, formatKey) && !bytes.Equal(v, formatV1) {
			return runID, fmt.Errorf("the layout marker is %q", v)
		}
	}
	return runID, nil
}

// writeMigrated writes mem as a new log store at to: a snapshot written to
// a temporary file beside it, synced, read back and replayed, then linked
// to the name to (which must still not exist).
func writeMigrated(mem *memStore, to string) error {
	dir := filepath.Dir(to)
	tmp, err := os.CreateTemp(dir, filepath.Base(to)+".migrating-*")
	if err != nil {
		return fmt.Errorf("localworld: migrate to %s: %w", to, err)
	}
	tmpName := tmp.Name()
	defer func() { _ = os.Remove(tmpName) }()
	s := &logStore{path: to, file: to, dir: dir}
	job := &compactJob{firstSeq: 1}
	for i := range job.trees {
		job.trees[i] = mem.buckets[i]
	}
	end, err := s.writeSnapshotTo(tmp, job, nil)
	if err == nil {
		err = markClosed(tmp, end, true)
	}
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("localworld: migrate to %s: %w", to, err)
	}
	buf, err := os.ReadFile(tmpName)
	if err != nil {
		return fmt.Errorf("localworld: migrate to %s: read back: %w", to, err)
	}
	back := newMemStore()
	if _, err := replayLog(tmpName, buf, back); err != nil {
		return fmt.Errorf("localworld: migrate to %s: the new store does not read back: %w", to, err)
	}
	for i := range back.buckets {
		if back.buckets[i].Len() != mem.buckets[i].Len() {
			return fmt.Errorf("localworld: migrate to %s: the new store reads back %d entries of bucket %s, %d were written",
				to, back.buckets[i].Len(), bucketID(i), mem.buckets[i].Len())
		}
	}
	if err := os.Link(tmpName, to); err != nil {
		return fmt.Errorf("localworld: migrate to %s: %w", to, err)
	}
	return syncDir(dir)
}

// recordOf returns a new value of the type bucket b stores, to decode one.
func recordOf(b bucketID) any {
	switch b {
	case bSteps:
		return new(world.Step)
	case bHooks:
		return new(storedHook)
	case bWaits:
		return new(world.Wait)
	case bLeases:
		return new(runLease)
	case bQueueMsgs:
		return new(queueMsg)
	case bQueueIdem:
		return new(queueIdem)
	case bStreams:
		return new(streamMeta)
	}
	return new(json.RawMessage)
}
