package encrypt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/skeinflow/skein/world"
)

// Config configures Wrap.
type Config struct {
	// Keys makes and opens the runs' data keys (required).
	Keys Keyring
	// CacheSize bounds the open data keys kept in memory (default 4096).
	CacheSize int
	// Logger receives what the wrapper has to say (default: discarded).
	Logger *slog.Logger
	// LeaveSealed returns the payloads a read cannot open (no key, a wrong
	// key) sealed, as stored, instead of failing the read: for tools that
	// show what they can and say what they cannot (see Describe). Writes
	// still fail.
	LeaveSealed bool
}

// World is a world.World whose payloads are sealed in the World it wraps.
// Each method of world.World and world.Consumer is the wrapped World's, with
// the payloads it writes sealed and those it reads opened.
type World struct {
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
	_ world.World         = (*World)(nil)
	_ world.Consumer      = (*World)(nil)
	_ world.AppendLimiter = (*World)(nil)
)

// Wrap returns w with its payloads sealed by cfg.Keys.
func Wrap(w world.World, cfg Config) (*World, error) {
	if w == nil {
		return nil, errors.New("encrypt: no World to wrap")
	}
	if cfg.Keys == nil {
		return nil, errors.New("encrypt: no Keys: a Keyring is required")
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &World{inner: w, keys: cfg.Keys, log: cfg.Logger, leaveSealed: cfg.LeaveSealed, cache: map[string]*runKey{}, size: cfg.CacheSize}, nil
}

// Unwrap returns the wrapped World.
func (w *World) Unwrap() world.World { return w.inner }

// Limits returns the wrapped World's limits (world.LimitsOf), which it
// judges on the sealed payloads.
func (w *World) Limits() world.Limits { return world.LimitsOf(w.inner) }

func (w *World) cached(runID string) (*runKey, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.cache[runID]
	return k, ok
}

func (w *World) remember(runID string, k *runKey) {
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

// openKey opens the data key an envelope of the run input carries.
func (w *World) openKey(ctx context.Context, runID string, env *envelope) (*runKey, error) {
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
	k := &runKey{keyID: env.Key, wrapped: env.Wrapped, aead: aead, raw: raw}
	w.remember(runID, k)
	return k, nil
}

// runKey returns the run's data key, nil for a run whose payloads are in
// clear (created before encryption was turned on). It reads the run's
// input from the wrapped World when the key is not cached.
func (w *World) runKey(ctx context.Context, runID string) (*runKey, error) {
	if k, ok := w.cached(runID); ok {
		return k, nil
	}
	r, err := w.inner.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	env := parseEnvelope(r.Input)
	if env == nil || len(env.Wrapped) == 0 {
		w.remember(runID, nil)
		return nil, nil
	}
	return w.openKey(ctx, runID, env)
}

// newRunKey draws the data key of a run being created.
func (w *World) newRunKey(ctx context.Context) (*runKey, error) {
	raw, wrapped, id, err := w.keys.NewDataKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("encrypt: new data key: %w", err)
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return nil, err
	}
	return &runKey{keyID: id, wrapped: wrapped, aead: aead, raw: raw}, nil
}

// open opens one payload of runID, which may be in clear.
func (w *World) open(ctx context.Context, runID, purpose string, b []byte) ([]byte, error) {
	env := parseEnvelope(b)
	if env == nil {
		return b, nil
	}
	var k *runKey
	var err error
	if len(env.Wrapped) > 0 {
		if k, _ = w.cached(runID); k == nil {
			k, err = w.openKey(ctx, runID, env)
		}
	} else {
		k, err = w.runKey(ctx, runID)
	}
	if err == nil && k == nil {
		err = &KeyError{KeyID: env.Key, RunID: runID, Err: errors.New("the run's input holds no data key")}
	}
	var p []byte
	if err == nil {
		p, err = k.openPayload(runID, purpose, env)
	}
	if err != nil && w.leaveSealed && errors.Is(err, ErrKey) {
		w.noteSealed(env.Key, err)
		return b, nil
	}
	return p, err
}
