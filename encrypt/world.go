package encrypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// Config configures Wrap.
type Config struct {
	// Keys makes and opens the runs' data keys (required).
	Keys Keyring
	// Logger receives what the wrapper has to say (default: discarded).
	Logger *slog.Logger
	// LeaveSealed returns the payloads a read cannot open (no key, a wrong
	// key) sealed, as stored, instead of failing the read: for tools that
	// show what they can and say what they cannot (see Describe). Writes
	// still fail.
	LeaveSealed bool
}

// cacheSize bounds the open data keys a wrapper keeps in memory (the
// oldest goes first).
const cacheSize = 4096

// sealedWorld is a world.World whose payloads are sealed in the World it
// wraps. Each method of world.World and world.Consumer is the wrapped
// World's, with the payloads it writes sealed and those it reads opened.
type sealedWorld struct {
	inner       world.World
	keys        Keyring
	log         *slog.Logger
	leaveSealed bool

	mu    sync.Mutex
	cache map[string]*runKey // by run ID; nil: a run whose payloads are in clear
	order []string
	size  int

	// sealedWhy is, by key ID, the error that left a payload sealed
	// (LeaveSealed), for Describe and SealedReason.
	sealedWhy map[string]error
}

var (
	_ world.World         = (*sealedWorld)(nil)
	_ world.Consumer      = (*sealedWorld)(nil)
	_ world.AppendLimiter = (*sealedWorld)(nil)
)

// Wrap returns w with its payloads sealed by cfg.Keys: a world.World whose
// methods are w's, with the payloads they write sealed and those they read
// opened. It is also a world.Consumer (the wrapped World's queue; a
// Receive fails when w is none) and a world.Watcher (w's watch, or a
// poller), so a Worker takes it as its World and Consumer alike.
//
// For tools that show runs whose payloads a read left sealed
// (Config.LeaveSealed), the World also has these methods, reached by a
// type assertion to an interface that names them:
//
//	Describe(payload []byte) string  // a payload left sealed, and why
//	DescribeKey(keyID string) string // the same for a key ID
//	SealedReason(keyID string) error // why keyID's payloads stayed sealed (nil: none did)
func Wrap(w world.World, cfg Config) (world.World, error) {
	if w == nil {
		return nil, errors.New("encrypt: no World to wrap")
	}
	if cfg.Keys == nil {
		return nil, errors.New("encrypt: no Keys: a Keyring is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &sealedWorld{inner: w, keys: cfg.Keys, log: cfg.Logger, leaveSealed: cfg.LeaveSealed, cache: map[string]*runKey{}, size: cacheSize}, nil
}

// Unwrap returns the wrapped World.
func (w *sealedWorld) Unwrap() world.World { return w.inner }

// Limits returns the wrapped World's limits (runrules.LimitsOf), which it
// judges on the sealed payloads.
func (w *sealedWorld) Limits() world.Limits { return runrules.LimitsOf(w.inner) }

func (w *sealedWorld) cached(runID string) (*runKey, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.cache[runID]
	return k, ok
}

func (w *sealedWorld) remember(runID string, k *runKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.cache[runID]; !ok {
		w.order = append(w.order, runID)
	}
	w.cache[runID] = k
	for len(w.order) > w.size {
		delete(w.cache, w.order[0])
		w.order = w.order[1:]
	}
}

// keyOf returns the data key of runID from its key record: the run's
// input and execution context as stored (a run's or its run_created's),
// nil for a run whose payloads are in clear. Whether the run is sealed is
// what it recorded when it was created (sealmark.Sealed), never the shape
// of the payload being read. The key is the one the input's envelope
// wraps, and only once the input opens under it at its place: a record
// carrying another run's key, or damaged, is an error that caches nothing.
func (w *sealedWorld) keyOf(ctx context.Context, runID string, input, ec json.RawMessage) (*runKey, error) {
	if k, ok := w.cached(runID); ok {
		return k, nil
	}
	kid, sealed := sealmark.Sealed(input, ec)
	if !sealed {
		w.remember(runID, nil)
		return nil, nil
	}
	at := place{field: fieldRunInput}
	env, err := strictEnvelope(input)
	switch {
	case len(input) == 0:
		return nil, tampered(runID, kid, at, "the run is sealed and its input, which holds its data key, is missing")
	case err != nil:
		return nil, tampered(runID, kid, at, "the run's key record: "+err.Error())
	case len(env.Wrapped) == 0:
		return nil, tampered(runID, env.Key, at, "the run's input holds no data key")
	case sealmark.Marked(ec) && env.Version < envelopeV2:
		return nil, tampered(runID, env.Key, at, fmt.Sprintf("envelope version %d in a run sealed with version %d", env.Version, envelopeV2))
	}
	raw, err := w.keys.OpenDataKey(ctx, env.Key, env.Wrapped)
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.RunID = runID
			return nil, ke
		}
		return nil, &KeyError{KeyID: env.Key, RunID: runID, Err: err}
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return nil, &KeyError{KeyID: env.Key, RunID: runID, Err: err}
	}
	k := &runKey{keyID: env.Key, wrapped: env.Wrapped, aead: aead, raw: raw, version: env.Version}
	if _, err := k.openPayload(runID, at, input, true); err != nil {
		return nil, err
	}
	w.remember(runID, k)
	return k, nil
}

// runKey returns the run's data key (keyOf), reading the run from the
// wrapped World when the key is not cached.
func (w *sealedWorld) runKey(ctx context.Context, runID string) (*runKey, error) {
	if k, ok := w.cached(runID); ok {
		return k, nil
	}
	r, err := w.inner.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	return w.keyOf(ctx, runID, r.Input, r.ExecutionContext)
}

// newRunKey draws the data key of a run being created.
func (w *sealedWorld) newRunKey(ctx context.Context) (*runKey, error) {
	raw, wrapped, id, err := w.keys.NewDataKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("encrypt: new data key: %w", err)
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return nil, err
	}
	return &runKey{keyID: id, wrapped: wrapped, aead: aead, raw: raw, version: envelopeV2}, nil
}

// open opens b, the payload of runID at p, with the run's key k (nil: a
// run in clear, whose payloads are returned as stored, whatever their
// shape). required: see openPayload.
func (w *sealedWorld) open(runID string, k *runKey, p place, b []byte, required bool) ([]byte, error) {
	if k == nil {
		return b, nil
	}
	return k.openPayload(runID, p, b, required)
}

// leave decides what a read that met err returns: with LeaveSealed, a key
// this World does not have (or has other bytes for) leaves the payloads
// as stored (true); damage never does.
func (w *sealedWorld) leave(err error) bool {
	var ke *KeyError
	if !w.leaveSealed || !errors.As(err, &ke) || errors.Is(err, ErrTampered) {
		return false
	}
	w.noteSealed(ke.KeyID, err)
	return true
}
