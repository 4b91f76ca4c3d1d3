package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

// Versions. A run records the code version that started it
// (world.Run.Version); an engine configured with Config.AcceptVersion
// executes only the runs whose version it accepts. A message of any other
// run is left for a compatible executor: the engine sends it back to the
// queue as a new message (Refused one higher, delayed by VersionRetryDelay
// doubling up to VersionRetryLimit) and acknowledges the one it received.
// A new message, rather than the received one released, because queues
// count receives: SQS moves a message received maxReceiveCount times to
// its dead-letter queue, and MaxDeliveries would fail the run; a refusal
// must do neither, however long the run waits for its executor. The new
// message is sent before the old one is acknowledged, under a key derived
// from the old one, so a refusal repeated (the old message delivered again)
// sends one message, and none is ever lost.
//
// A message whose run has ended, or cannot be read, is not refused: it
// needs no workflow code (the end's side effects are the same in every
// version), and the usual path drops or handles it.

// gate decides whether this executor handles a message at all: a run of
// a version it does not run (refuseVersion) or whose payloads it cannot
// open (keyCheck, refuseKey) is sent back to the queue for another
// executor, before anything counts against the run.
type gate struct {
	*port
	// versions remembers the runs' code versions (Config.AcceptVersion).
	versions versionCache
}

// versionCacheSize bounds the run versions an engine remembers (a run's
// version never changes, so a remembered one is never stale).
const versionCacheSize = 4096

// versionCache remembers the versions of the runs an engine has read.
type versionCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *versionCache) get(runID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[runID]
	return v, ok
}

func (c *versionCache) put(runID, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= versionCacheSize {
		c.m = make(map[string]string)
	}
	c.m[runID] = version
}

// refuseVersion sends msg back to the queue, for a compatible executor,
// when its run's version is one this engine does not accept, and reports
// whether it did. Without Config.AcceptVersion it accepts everything and
// reads nothing; with it, a run's first message costs one read.
func (g *gate) refuseVersion(ctx context.Context, msg world.Message) (bool, error) {
	accept := g.cfg.AcceptVersion
	if accept == nil {
		return false, nil
	}
	if v, ok := g.versions.get(msg.RunID); ok && accept(v) {
		return false, nil
	}
	run, err := g.w.GetRun(ctx, &world.GetRunParams{RunID: msg.RunID})
	switch {
	case errors.Is(err, world.ErrNotFound), errors.Is(err, world.ErrGone):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("engine: read the version of run %s: %w", msg.RunID, err)
	}
	g.versions.put(run.RunID, run.Version)
	if accept(run.Version) || run.Status.Terminal() && !compWork(run) {
		return false, nil
	}
	next, delay, err := g.sendBack(ctx, msg)
	if err != nil {
		return false, fmt.Errorf("engine: leave run %s for an executor of version %q: %w", msg.RunID, run.Version, err)
	}
	if g.cfg.Metrics != nil {
		g.cfg.Metrics.Count(MetricMessagesRefused, 1)
	}
	g.log.Warn("engine: run of a version this executor does not run; its message goes back to the queue for a compatible executor",
		"run", msg.RunID, "workflow", run.WorkflowName, "version", run.Version, "status", run.Status,
		"step", msg.StepID, "refused", next.Refused, "retryIn", delay)
	return true, nil
}

// sendBack enqueues msg again as a new message, Refused one higher, after
// the refusal delay (or msg's own, if later): the caller then acknowledges
// msg, which counts against nothing.
func (g *gate) sendBack(ctx context.Context, msg world.Message) (world.Message, time.Duration, error) {
	next := msg
	next.Refused++
	delay := g.versionDelay(next.Refused)
	if early := msg.NotBefore.Sub(g.now()); early > delay {
		delay = early
	}
	delay = min(delay, g.cfg.MaxQueueDelay)
	body, err := world.EncodeMessage(next)
	if err != nil {
		return next, 0, err
	}
	_, err = g.w.Enqueue(ctx, &world.EnqueueParams{Body: body, Delay: delay, IdempotencyKey: keyRefused(body)})
	return next, delay, err
}

// refuseKey leaves the message of a run whose payloads this engine cannot
// open (keyErr matches world.ErrKeyUnavailable: an encrypting World without
// the run's key, or with wrong bytes for its ID) for an executor that holds
// the key, as refuseVersion does for another version: the run is healthy,
// so neither MaxDeliveries nor a queue's dead-letter count may end it while
// the key is being fixed. The error is logged (the operator must act), the
// message sent back and the received one acknowledged; the message of a
// run at rest (atRest) is acknowledged and dropped. A World that cannot open
// even the run's record without the key (encrypt) leaves its status
// unknown: the message is sent back.
func (g *gate) refuseKey(ctx context.Context, msg world.Message, keyErr error) error {
	if g.atRest(ctx, msg.RunID, "key unavailable") {
		return nil
	}
	next, delay, err := g.sendBack(ctx, msg)
	if err != nil {
		return fmt.Errorf("engine: leave run %s for an executor with its key: %w (after %w)", msg.RunID, err, keyErr)
	}
	if g.cfg.Metrics != nil {
		g.cfg.Metrics.Count(MetricKeyUnavailable, 1)
	}
	g.log.Error("engine: cannot open the run's payloads with this executor's keys; its message goes back to the queue until an executor has the key",
		"run", msg.RunID, "keyId", keyID(keyErr), "err", keyErr, "step", msg.StepID, "refused", next.Refused, "retryIn", delay)
	return nil
}

// versionDelay is the delay of a message refused for the n-th time (n ≥ 1):
// VersionRetryDelay doubling up to VersionRetryLimit.
func (g *gate) versionDelay(n int) time.Duration {
	d := g.cfg.VersionRetryDelay
	for i := 1; i < n && d < g.cfg.VersionRetryLimit; i++ {
		d *= 2
	}
	return min(d, g.cfg.VersionRetryLimit)
}

// keyRefused is the key of the message sent back to the queue in place of
// one refused for its run's version: a digest of the new message's body
// (the refused one's, Refused one higher), so that a refusal repeated
// sends one message, and two refusals of the same message (equal bodies:
// the same work) share one.
func keyRefused(body []byte) string {
	sum := sha256.Sum256(body)
	return "refused:" + hex.EncodeToString(sum[:16])
}

// keyCheck returns an error matching world.ErrKeyUnavailable when this
// engine's World cannot open the run's payloads: a sealed run read without
// an encrypting World (sealedWithoutKey), or an encrypting World without the run's
// key (its GetRun fails so). Other read errors are not its to judge: nil,
// and the caller goes on (a missing run, a failed read).
func (g *gate) keyCheck(ctx context.Context, runID string) error {
	run, err := g.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	switch {
	case errors.Is(err, world.ErrKeyUnavailable):
		return err
	case err != nil:
		return nil
	}
	return sealedWithoutKey(run.RunID, run.Input, run.ExecutionContext)
}
