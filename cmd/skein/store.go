package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// open opens the store: the deployed stack the flags name, or the local
// store, refusing to create one. A command that only reads opens the local
// store read-only, without its lock, so that a worker can start (and write)
// while it runs; a command that writes (command.writes, -repair-torn-tail)
// takes the lock for as long as it runs.
func (e *env) open(ctx context.Context) error {
	if e.w != nil {
		return nil // opened already (getRun opens too): one World per command
	}
	if e.remote.set() {
		return e.openRemote(ctx)
	}
	fi, err := os.Stat(e.db)
	if errors.Is(err, fs.ErrNotExist) && e.waitStore {
		fi, err = e.awaitStore(ctx)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no store at %s: run the quickstart (go run ./examples/quickstart) to make one, or pass -db (or set $SKEIN_DB)", e.db)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a store file", e.db)
	}
	var w *localworld.World
	if e.writes || e.repair {
		w, err = e.openLocked()
	} else {
		w, err = e.openRead()
	}
	if err != nil {
		return err
	}
	var ww world.World = w
	if e.actions && e.readOnly {
		// skein ui: read without the lock, take it for each action.
		e.act = &actWorld{World: w, e: e}
		ww = e.act
	}
	var keys encrypt.Keyring
	if e.keys != "" {
		lk, err := encrypt.ParseLocalKeys(e.keys)
		if err != nil {
			_ = w.Close()
			return usagef("-keys: %v", err)
		}
		keys = lk
	}
	return e.serve(w, ww, keys)
}

// storePoll is how often awaitStore looks for the store file.
const storePoll = 100 * time.Millisecond

// awaitStore waits for the local store file to appear, for the commands
// that follow a store (skein ui, runs watch) and may be started before the
// worker that creates it: it says so on stderr once, then looks every
// storePoll until the file exists or ctx ends (an error then).
func (e *env) awaitStore(ctx context.Context) (fs.FileInfo, error) {
	fmt.Fprintf(e.stderr, "skein: no store at %s yet; waiting for it to appear (start a worker or the quickstart on it; "+
		"-db or $SKEIN_DB for another; Ctrl-C to stop)\n", e.db)
	t := time.NewTicker(storePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no store at %s: stopped waiting for it: %w", e.db, ctx.Err())
		case <-t.C:
		}
		fi, err := os.Stat(e.db)
		if !errors.Is(err, fs.ErrNotExist) {
			return fi, err
		}
	}
}

// serve makes the commands' Client on ww (opened from base, closed on
// failure); with keys, what they cannot open is shown as sealed, naming
// its key.
func (e *env) serve(base io.Closer, ww world.World, keys encrypt.Keyring) error {
	if keys != nil {
		var err error
		if ww, err = encrypt.Wrap(ww, encrypt.Config{Keys: keys, LeaveSealed: true}); err != nil {
			_ = base.Close()
			return err
		}
	}
	// Warnings (the dashboard's request errors among them) go with the CLI's errors.
	client, err := client.New(client.Config{World: ww,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		_ = base.Close()
		return err
	}
	e.w, e.client = ww, client
	return nil
}

// localConfig is the local store's configuration.
func (e *env) localConfig() localworld.Config {
	return localworld.Config{
		Path: e.db, LockTimeout: e.lockTimeout, RepairTornTail: e.repair,
		// Warnings (such as what -repair-torn-tail dropped) go with the CLI's errors.
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// tornLooks is how many times openRead looks at an incomplete last record
// before it takes it for what a crash left rather than a write under way.
const tornLooks = 3

// openRead opens the local store read-only: it takes no lock, so a worker
// (or the quickstart) may hold the store and write as the command reads,
// and may start while it runs.
func (e *env) openRead() (*localworld.World, error) {
	cfg := e.localConfig()
	cfg.ReadOnly = true
	for look := 1; ; look++ {
		w, err := localworld.Open(cfg)
		if errors.Is(err, localworld.ErrTornTail) {
			return nil, fmt.Errorf("%v; to drop that record and keep everything before it, run the command again with -repair-torn-tail", err)
		}
		if err != nil {
			return nil, err
		}
		torn := w.TornTail()
		if torn == nil {
			e.readOnly = true
			return w, nil
		}
		_ = w.Close()
		if look == tornLooks {
			return nil, fmt.Errorf("%v; to drop that record and keep everything before it, run the command again with -repair-torn-tail", torn)
		}
		time.Sleep(50 * time.Millisecond) // a record being written is whole in a moment
	}
}

// openLocked opens the local store with its lock, which a worker holds
// while it runs: the way to change the store.
func (e *env) openLocked() (*localworld.World, error) {
	w, err := localworld.Open(e.localConfig())
	switch {
	case errors.Is(err, localworld.ErrLocked):
		return nil, e.lockedError()
	case errors.Is(err, localworld.ErrTornTail):
		return nil, fmt.Errorf("%v; to drop that record and keep everything before it, run the command again with -repair-torn-tail", err)
	}
	return w, err
}

// lockedError says that another process holds the store a command wanted
// to change, naming the process where the system tells.
func (e *env) lockedError() error {
	who := ""
	if h := lockHolder(e.db); h != "" {
		who = " (" + h + ")"
	}
	what := "this command"
	switch {
	case e.repair:
		what = "-repair-torn-tail"
	case e.actions:
		what = "this action"
	case e.cmdName != "":
		what = e.cmdName
	}
	return &lockedError{msg: fmt.Sprintf("the store %s is in use by another process%s: a worker, the quickstart, or a program "+
		"serving the dashboard from its worker; %s changes it, which only the process holding the store may do "+
		"(reading it is fine): stop that process, or make the change through it (its dashboard, its client.Client), "+
		"and run this command again (gave up waiting after %s)", e.db, who, what, e.lockTimeout)}
}

// lockedError is a write refused because another process holds the store.
type lockedError struct{ msg string }

func (e *lockedError) Error() string { return e.msg }

func (e *lockedError) Is(target error) bool { return target == localworld.ErrLocked }

// getRun opens the store and returns a run, with a clear error for a
// malformed or unknown ID.
func (e *env) getRun(ctx context.Context, runID string) (*world.Run, error) {
	if err := world.ValidateID(world.PrefixRun, runID); err != nil {
		return nil, usagef("%q is not a run ID (run IDs look like wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T; see skein runs list)", runID)
	}
	if err := e.open(ctx); err != nil {
		return nil, err
	}
	r, err := e.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if errors.Is(err, world.ErrNotFound) {
		return nil, fmt.Errorf("run %s not found in %s", runID, e.where())
	}
	return r, err
}
