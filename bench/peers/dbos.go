package peers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	// Registers SQLite (modernc.org/sqlite, database/sql driver "sqlite") as a
	// DBOS system database, as the DBOS README tells SQLite users to do.
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
)

// DBOSMode selects how the DBOS SQLite system database is opened.
type DBOSMode int

const (
	// SQLiteFull: WAL journal, synchronous=FULL (the WAL is fsynced at every
	// commit, so a committed step survives power loss).
	SQLiteFull DBOSMode = iota
	// SQLiteNormal: WAL journal, synchronous=NORMAL, DBOS's own default
	// (the WAL is fsynced only at checkpoints; a commit survives a process
	// crash but not necessarily power loss).
	SQLiteNormal
	// SQLiteURL: DBOS opens the database itself from a "sqlite:" URL, exactly
	// as in the DBOS README (WAL, synchronous=NORMAL). A cross-check that the
	// handle built for SQLiteNormal matches what DBOS builds on its own.
	SQLiteURL
)

func (m DBOSMode) String() string {
	switch m {
	case SQLiteFull:
		return "dbos-sqlite-full"
	case SQLiteNormal:
		return "dbos-sqlite-normal"
	case SQLiteURL:
		return "dbos-sqlite-url"
	}
	return fmt.Sprintf("DBOSMode(%d)", int(m))
}

// DBOSEngine is DBOS Transact Go on a SQLite system database in mode m.
func DBOSEngine(m DBOSMode) Engine {
	return Engine{
		Name: m.String(),
		Open: func(ctx context.Context, dir string) (Runner, error) { return openDBOS(ctx, dir, m) },
	}
}

// OpenDBOSSQLite opens a SQLite handle for DBOS the way DBOS's own
// sysdb.OpenSQLitePool does (v1.8.0: _txlock=immediate, busy_timeout 5000,
// foreign_keys on, journal_mode WAL, 8 open / 4 idle connections, 1 h
// lifetime), except that synchronous is the given level ("FULL" or "NORMAL")
// on every connection of the pool.
//
// Why not a "sqlite:" URL with _pragma=synchronous(FULL)? DBOS keeps a
// user-given synchronous pragma in the DSN, but then runs
// "PRAGMA synchronous = NORMAL" on the first connection and puts it back in
// the pool, so the pool would mix FULL and NORMAL connections. A handle passed
// in Config.SQLiteSystemDB is used as is ("the caller owns its ... PRAGMA
// configuration").
func OpenDBOSSQLite(ctx context.Context, path, synchronous string) (*sql.DB, error) {
	dsn := path +
		"?_txlock=immediate" +
		"&_pragma=busy_timeout(5000)" +
		"&_pragma=foreign_keys(ON)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + synchronous + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	db.SetConnMaxLifetime(time.Hour)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// dbosRunner runs the benchmark workflows on one launched DBOS context.
type dbosRunner struct {
	ctx dbos.Context
	db  *sql.DB // nil when DBOS opened the database itself

	// stamps is where the steps of the current Seq run record their start;
	// runs are never concurrent, so one field suffices.
	mu     sync.Mutex
	stamps []time.Time

	closing atomic.Bool // set once Close starts; silences DBOS's logger
}

// quietHandler drops every record once closing is set.
type quietHandler struct {
	slog.Handler
	closing *atomic.Bool
}

func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !h.closing.Load() && h.Handler.Enabled(ctx, l)
}

func (h *quietHandler) Handle(ctx context.Context, rec slog.Record) error {
	if h.closing.Load() {
		return nil
	}
	return h.Handler.Handle(ctx, rec)
}

func (h *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietHandler{Handler: h.Handler.WithAttrs(as), closing: h.closing}
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{Handler: h.Handler.WithGroup(name), closing: h.closing}
}

func openDBOS(ctx context.Context, dir string, m DBOSMode) (Runner, error) {
	path := filepath.Join(dir, "dbos.sqlite")
	cfg := dbos.Config{
		AppName: "skein-peers-bench",
	}
	r := &dbosRunner{}
	// DBOS logs at Info by default (launch, shutdown); keep warnings only,
	// and drop what its background loops log while shutting down ("context
	// canceled"), which would otherwise interleave with benchmark lines.
	cfg.Logger = slog.New(&quietHandler{
		Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
		closing: &r.closing,
	})
	switch m {
	case SQLiteFull, SQLiteNormal:
		level := "FULL"
		if m == SQLiteNormal {
			level = "NORMAL"
		}
		db, err := OpenDBOSSQLite(ctx, path, level)
		if err != nil {
			return nil, err
		}
		r.db = db
		cfg.SQLiteSystemDB = db
	case SQLiteURL:
		cfg.DatabaseURL = "sqlite:" + path
	default:
		return nil, fmt.Errorf("unknown DBOS mode %v", m)
	}

	dctx, err := dbos.NewContext(ctx, cfg)
	if err != nil {
		if r.db != nil {
			_ = r.db.Close()
		}
		return nil, err
	}
	r.ctx = dctx
	dbos.RegisterWorkflow(dctx, r.seqWorkflow, dbos.WithWorkflowName("seq"))
	dbos.RegisterWorkflow(dctx, fanoutWorkflow, dbos.WithWorkflowName("fanout"))
	dbos.RegisterWorkflow(dctx, sleepWorkflow, dbos.WithWorkflowName("sleep"))
	if err := dbos.Launch(dctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// noop is the step body of every scenario.
func noop(context.Context) (int, error) { return 1, nil }

// seqWorkflow calls n no-op steps one after the other, as a DBOS user writes
// it: dbos.RunAsStep in a loop.
func (r *dbosRunner) seqWorkflow(ctx dbos.Context, n int) (int, error) {
	r.mu.Lock()
	stamps := r.stamps
	r.mu.Unlock()
	sum := 0
	for i := range n {
		step := noop
		if stamps != nil {
			step = func(context.Context) (int, error) {
				stamps[i] = time.Now()
				return 1, nil
			}
		}
		v, err := dbos.RunAsStep(ctx, step)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// fanoutWorkflow starts n no-op steps with dbos.Go, DBOS's documented way to
// run steps in parallel (each one a RunAsStep in its own goroutine with a
// step ID fixed at call time), and waits for all their outcomes.
func fanoutWorkflow(ctx dbos.Context, n int) (int, error) {
	chans := make([]<-chan dbos.StepOutcome[int], n)
	for i := range n {
		ch, err := dbos.Go(ctx, noop)
		if err != nil {
			return 0, err
		}
		chans[i] = ch
	}
	sum := 0
	var errs []error
	for _, ch := range chans {
		o := <-ch
		if o.Err != nil {
			errs = append(errs, o.Err)
		}
		sum += o.Result
	}
	return sum, errors.Join(errs...)
}

// sleepWorkflow durably sleeps d and returns the lateness of its wake-up in
// nanoseconds: time.Now() after dbos.Sleep minus (time.Now() before + d).
func sleepWorkflow(ctx dbos.Context, d time.Duration) (int64, error) {
	before := time.Now()
	if _, err := dbos.Sleep(ctx, d); err != nil {
		return 0, err
	}
	return int64(time.Since(before) - d), nil
}

func (r *dbosRunner) Seq(_ context.Context, n int, stamps []time.Time) error {
	r.mu.Lock()
	r.stamps = stamps
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.stamps = nil
		r.mu.Unlock()
	}()
	h, err := dbos.RunWorkflow(r.ctx, r.seqWorkflow, n)
	if err != nil {
		return err
	}
	got, err := h.GetResult()
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("seq %d: workflow ran %d steps", n, got)
	}
	return nil
}

func (r *dbosRunner) Fanout(_ context.Context, n int) error {
	h, err := dbos.RunWorkflow(r.ctx, fanoutWorkflow, n)
	if err != nil {
		return err
	}
	got, err := h.GetResult()
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("fanout %d: workflow ran %d steps", n, got)
	}
	return nil
}

func (r *dbosRunner) SleepWake(_ context.Context, d time.Duration) (time.Duration, error) {
	h, err := dbos.RunWorkflow(r.ctx, sleepWorkflow, d)
	if err != nil {
		return 0, err
	}
	late, err := h.GetResult()
	return time.Duration(late), err
}

func (r *dbosRunner) Close() error {
	r.closing.Store(true)
	err := dbos.Shutdown(r.ctx, 10*time.Second)
	if r.db != nil {
		// DBOS closes the handle it was given too; closing twice is harmless.
		err = errors.Join(err, r.db.Close())
	}
	return err
}

// DBOSSynchronous reports the synchronous level (0 OFF, 1 NORMAL, 2 FULL,
// 3 EXTRA) and journal mode of up to n connections held at once from r's
// handle. For tests; r must come from a mode with its own handle.
func DBOSSynchronous(ctx context.Context, r Runner, n int) (levels []int, journal []string, err error) {
	dr, ok := r.(*dbosRunner)
	if !ok || dr.db == nil {
		return nil, nil, errors.New("not a DBOS runner with its own handle")
	}
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := dr.db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		conns = append(conns, c)
		var lvl int
		var jm string
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&lvl); err != nil {
			return nil, nil, err
		}
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&jm); err != nil {
			return nil, nil, err
		}
		levels = append(levels, lvl)
		journal = append(journal, jm)
	}
	return levels, journal, nil
}
