package localworld

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// SyncPolicy says when a durable World forces its commits to stable storage.
// It has no effect in memory.
type SyncPolicy int

const (
	// SyncEveryCommit (the default) fsyncs every transaction before the call
	// that made it returns: a returned Append, Enqueue or WriteStream survives
	// a crash of the process or the machine.
	SyncEveryCommit SyncPolicy = iota
	// SyncBatch is group commit: writes that arrive while a commit is being
	// synced are combined into the next transaction and share its fsync. It
	// is exactly as durable as SyncEveryCommit (a call returns after the
	// fsync of its transaction) and adds no wait for a lone writer. In
	// the log store every synced commit is a group commit, so the two
	// policies are the same.
	SyncBatch
	// SyncNone never fsyncs. A process crash loses nothing (the page cache
	// survives it) but a machine crash or power loss can lose recent commits
	// or corrupt the file. For benchmarks and throwaway stores only.
	SyncNone
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncEveryCommit:
		return "every-commit"
	case SyncBatch:
		return "batch"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// Defaults applied by Config.WithDefaults. A request that names no run
// lease or visibility gets world.DefaultRunLease or world.DefaultVisibility.
const (
	DefaultDedupeWindow = 24 * time.Hour
	DefaultLockTimeout  = 2 * time.Second
)

// defaultWatchPollMin and defaultWatchPollMax bound how often a watch on a
// read-only World looks at the file, for a watch whose WatchParams set
// no bounds (knobs.WithWatchPoll).
const (
	defaultWatchPollMin = 5 * time.Millisecond
	defaultWatchPollMax = 100 * time.Millisecond
)

// MaxReceive bounds ReceiveParams.Max.
const MaxReceive = 1000

// Config configures a World. The zero value is a valid in-memory World.
type Config struct {
	// Path is the store file. Empty means in memory: nothing survives Close.
	// A missing file is created; an existing one must be a localworld store.
	Path string
	// Sync is the durability policy of a file store (default SyncEveryCommit).
	Sync SyncPolicy
	// LockTimeout bounds the wait for the file lock another process holds
	// (default 2s). A store is used by one process at a time.
	LockTimeout time.Duration
	// RepairTornTail lets Open of a log store whose last record is
	// incomplete (a crash in the middle of a write: ErrTornTail) truncate
	// the file after the last whole record, logging what it drops, instead
	// of failing. That record's commit was never acknowledged. Damage
	// elsewhere in the file is never repaired.
	RepairTornTail bool
	// ReadOnly opens an existing log-format store to read it while another
	// process (a worker) may hold it and write: no lock is taken, every
	// read first catches up with the commits appended since the last one,
	// and every write fails with ErrReadOnly. An incomplete last record is
	// taken for one being written and left out while a process holds the
	// store (World.TornTail reports it); with none holding it, Open fails
	// with it (ErrTornTail), as Open with the lock does. A file cut short
	// is ErrCorrupt.
	ReadOnly bool

	// Logger receives operational messages (default: warnings and errors
	// to stderr).
	Logger *slog.Logger

	// DedupeWindow is how long an Enqueue idempotency key suppresses
	// duplicates (default 24h).
	DedupeWindow time.Duration
	// Limits bound how far one run may grow (events, payload size, hooks,
	// waits, stream bytes, streams): see world.Limits for each and its default.
	Limits world.Limits

	// now is the clock for every time the World records or compares:
	// createdAt, leases, queue delays and visibility, dedupe expiry (default
	// time.Now; knobs.WithNow). Waiting (Receive) uses real timers for the
	// difference. entropy feeds ID generation (default crypto/rand;
	// knobs.WithEntropy).
	now     func() time.Time
	entropy io.Reader
	// watchPollMin and watchPollMax bound the wait between two looks at
	// the file of a watch (World.Watch) on a ReadOnly World, which has no
	// other way to learn of another process's commits, when the watch's
	// WatchParams set none (default 5ms, doubling while idle up to 100ms;
	// knobs.WithWatchPoll). A World that writes wakes its watchers at every
	// commit and does not poll.
	watchPollMin, watchPollMax time.Duration
	// fileMode is the permission of a created file (default 0600;
	// knobs.WithFileMode).
	fileMode os.FileMode
	// compactMin is the size below which a log file is never compacted
	// (default 64 MiB); tests set it small.
	compactMin int64
	// spillWindow is how many bytes of the values that go to disk a log
	// store keeps in memory after their commit (default 1 MiB, spill.go);
	// tests set it small.
	spillWindow int64
	// alloc is how a log store grows its file, for the benchmark that
	// compares the ways.
	alloc allocMode
}

// allocMode is how a log store grows its file.
type allocMode int

const (
	allocDefault   allocMode = iota // allocZeroFill
	allocZeroFill                   // write a chunk of zeros ahead, fsync
	allocFallocate                  // fallocate a chunk ahead, fsync
	allocNone                       // append, growing the file at every commit
)

// defaultFileMode is the permission of a file the World creates.
const defaultFileMode = 0o600

// withKnobs returns a copy of c with the test-only settings k holds.
func (c Config) withKnobs(k knobs.Set) Config {
	if k.Now != nil {
		c.now = k.Now
	}
	if k.Entropy != nil {
		c.entropy = k.Entropy
	}
	if k.FileMode != 0 {
		c.fileMode = k.FileMode
	}
	if k.WatchPollMin > 0 {
		c.watchPollMin = k.WatchPollMin
	}
	if k.WatchPollMax > 0 {
		c.watchPollMax = k.WatchPollMax
	}
	return c
}

// defaultCompactMin is the log size below which a log store never compacts.
const defaultCompactMin = 64 << 20

// WithDefaults returns a copy of c with every unset field given its default.
// It is safe on a nil Config.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.Limits = out.Limits.WithDefaults()
	if out.LockTimeout == 0 {
		out.LockTimeout = DefaultLockTimeout
	}
	if out.compactMin <= 0 {
		out.compactMin = defaultCompactMin
	}
	if out.spillWindow <= 0 {
		out.spillWindow = defaultSpillWindow
	}
	if out.fileMode == 0 {
		out.fileMode = defaultFileMode
	}
	if out.now == nil {
		out.now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if out.DedupeWindow == 0 {
		out.DedupeWindow = DefaultDedupeWindow
	}
	if out.watchPollMin <= 0 {
		out.watchPollMin = defaultWatchPollMin
	}
	if out.watchPollMax <= 0 {
		out.watchPollMax = defaultWatchPollMax
	}
	return &out
}

// validate checks a Config after WithDefaults.
func (c *Config) validate() error {
	var errs []error
	switch c.Sync {
	case SyncEveryCommit, SyncBatch, SyncNone:
	default:
		errs = append(errs, fmt.Errorf("unknown Sync policy %d", int(c.Sync)))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("negative LockTimeout %s", c.LockTimeout))
	}
	if c.DedupeWindow < 0 {
		errs = append(errs, fmt.Errorf("negative DedupeWindow %s", c.DedupeWindow))
	}
	if c.fileMode&^os.ModePerm != 0 {
		errs = append(errs, fmt.Errorf("file mode %s has more than permission bits", c.fileMode))
	}
	if err := errors.Join(errs...); err != nil {
		return cfgerr.Invalid(fmt.Errorf("localworld: invalid config: %w", err))
	}
	return nil
}
