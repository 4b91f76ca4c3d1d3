package worldtest_test

// The queue and streams of memWorld, the suite's self-test World.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/skeinflow/skein/world"
)

// ---- queue ----

func (w *memWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if id, ok := w.keys[p.IdempotencyKey]; ok && p.IdempotencyKey != "" && w.bug != "queue-no-dedupe" {
		return &world.EnqueueResult{MessageID: id, Duplicate: true}, nil
	}
	id := w.ids.New(world.PrefixMsg)
	if c, ok := w.claims[p.IdempotencyKey]; ok && p.IdempotencyKey != "" {
		switch {
		case w.bug == "queue-pending-duplicate":
			return &world.EnqueueResult{MessageID: c.id, Duplicate: true}, nil
		case w.now().Before(c.at.Add(memPendingGrace)):
			return nil, fmt.Errorf("%w: key %q", world.ErrKeyPending, p.IdempotencyKey)
		}
		delete(w.claims, p.IdempotencyKey) // taken over, keeping its ID
		id = c.id
	}
	now := time.Now()
	m := &memMsg{id: id, body: slices.Clone(p.Body), visibleAt: now.Add(p.Delay), enqueued: now}
	if w.bug == "queue-no-delay" {
		m.visibleAt = now
	}
	w.msgs[m.id] = m
	w.msgOrder = append(w.msgOrder, m.id)
	if p.IdempotencyKey != "" {
		w.keys[p.IdempotencyKey] = m.id
	}
	return &world.EnqueueResult{MessageID: m.id}, nil
}

// memPendingGrace is how long an abandoned claim holds its key.
const memPendingGrace = 30 * time.Second

// memClaim is an idempotency key claimed by a sender that never sent.
type memClaim struct {
	id string
	at time.Time
}

// abandonClaim claims key as a sender that died before sending would
// (worldtest.Subject.AbandonClaim): memWorld plays a World whose Enqueue
// claims and sends in two steps.
func (w *memWorld) abandonClaim(_ context.Context, key string) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	w.claims[key] = memClaim{id: w.ids.New(world.PrefixMsg), at: w.now()}
	return nil
}

func (w *memWorld) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	deadline := time.Now().Add(p.Wait)
	for {
		if err := w.lock(); err != nil {
			return nil, err
		}
		now := time.Now()
		var out []world.Delivery
		for _, id := range w.msgOrder {
			m := w.msgs[id]
			if m == nil || (m.visibleAt.After(now) && w.bug != "queue-no-visibility") || len(out) >= max(p.Max, 1) {
				continue
			}
			m.attempt++
			m.receipt = w.ids.New("rcpt_")
			m.visibleAt = now.Add(p.Visibility)
			out = append(out, world.Delivery{MessageID: m.id, Receipt: m.receipt, Body: slices.Clone(m.body), Attempt: m.attempt, EnqueuedAt: m.enqueued})
		}
		w.mu.Unlock()
		if len(out) > 0 || !now.Before(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(2*time.Millisecond, time.Until(deadline))):
		}
	}
}

func (w *memWorld) delivery(receipt string) (*memMsg, error) {
	for _, m := range w.msgs {
		if m.receipt == receipt && receipt != "" {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: receipt", world.ErrNotFound)
}

func (w *memWorld) Ack(ctx context.Context, p *world.AckParams) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	m, err := w.delivery(p.Receipt)
	if err != nil || w.bug == "queue-ack-noop" {
		return err
	}
	delete(w.msgs, m.id)
	w.msgOrder = slices.DeleteFunc(w.msgOrder, func(id string) bool { return id == m.id })
	return nil
}

func (w *memWorld) Release(ctx context.Context, p *world.ReleaseParams) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	m, err := w.delivery(p.Receipt)
	if err != nil {
		return err
	}
	m.visibleAt = time.Now().Add(p.Delay)
	m.receipt = ""
	return nil
}

func (w *memWorld) Extend(ctx context.Context, p *world.ExtendParams) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	m, err := w.delivery(p.Receipt)
	if err != nil || w.bug == "queue-extend-noop" {
		return err
	}
	m.visibleAt = time.Now().Add(p.Visibility)
	return nil
}

// ---- streams ----

func (w *memWorld) stream(run, name string, create bool) *memStream {
	if w.streams[run] == nil {
		if !create {
			return nil
		}
		w.streams[run] = map[string]*memStream{}
	}
	s := w.streams[run][name]
	if s == nil && create {
		s = &memStream{}
		w.streams[run][name] = s
	}
	return s
}

// openStream returns a stream, creating it within Limits.MaxStreams.
func (w *memWorld) openStream(run, name string) (*memStream, error) {
	if s := w.stream(run, name, false); s != nil {
		return s, nil
	}
	if limit := w.Limits().MaxStreams; len(w.streams[run]) >= limit && w.bug != "no-stream-count" {
		return nil, &world.LimitError{RunID: run, Limit: "streams", Max: int64(limit), Size: int64(len(w.streams[run])) + 1, What: "stream " + name}
	}
	return w.stream(run, name, true), nil
}

func (w *memWorld) notify(run, name string) {
	k := run + "\x00" + name
	if ch := w.changed[k]; ch != nil {
		close(ch)
		delete(w.changed, k)
	}
}

func (w *memWorld) StreamChanged(run, name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := run + "\x00" + name
	if w.changed[k] == nil {
		w.changed[k] = make(chan struct{})
	}
	return w.changed[k]
}

func (w *memWorld) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	if err := world.ValidateStreamName(p.Name); err != nil {
		return err
	}
	if w.bug == "stream-interleave" {
		// One chunk at a time: concurrent writes interleave.
		for _, c := range p.Chunks {
			if err := w.write(p.RunID, p.Name, [][]byte{c}); err != nil {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
		return nil
	}
	return w.write(p.RunID, p.Name, p.Chunks)
}

func (w *memWorld) write(run, name string, chunks [][]byte) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	s, err := w.openStream(run, name)
	if err != nil {
		return err
	}
	if s.closed && w.bug != "stream-write-after-close" {
		return fmt.Errorf("%w: stream %s is closed", world.ErrConflict, name)
	}
	size := s.bytes
	for _, c := range chunks {
		size += int64(len(c))
	}
	if limit := w.Limits().MaxStreamBytes; size > limit && w.bug != "no-stream-limit" {
		return &world.LimitError{RunID: run, Limit: "stream bytes", Max: limit, Size: size, What: "stream " + name}
	}
	s.bytes = size
	for _, c := range chunks {
		s.chunks = append(s.chunks, slices.Clone(c))
	}
	w.notify(run, name)
	return nil
}

func (w *memWorld) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	if err := world.ValidateStreamName(p.Name); err != nil {
		return err
	}
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	s, err := w.openStream(p.RunID, p.Name)
	if err != nil {
		return err
	}
	s.closed = true
	w.notify(p.RunID, p.Name)
	return nil
}

func (w *memWorld) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if err := world.ValidateStreamName(p.Name); err != nil {
		return nil, err
	}
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	s := w.stream(p.RunID, p.Name, false)
	if s == nil {
		return &world.StreamPage{Next: max(p.Start, 0)}, nil
	}
	n := int64(len(s.chunks))
	start := p.Start
	if start < 0 {
		start = max(0, n+start)
	}
	limit := int64(p.Limit)
	if limit <= 0 {
		limit = world.DefaultPageLimit
	}
	end := min(n, start+limit)
	out := &world.StreamPage{Next: max(start, end), Done: s.closed && end >= n || w.bug == "stream-done-early"}
	for i := start; i < end; i++ {
		out.Chunks = append(out.Chunks, world.StreamChunk{Index: i, Data: slices.Clone(s.chunks[i])})
	}
	return out, nil
}

func (w *memWorld) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	s := w.stream(p.RunID, p.Name, false)
	if s == nil {
		return &world.StreamInfo{TailIndex: -1}, nil
	}
	return &world.StreamInfo{TailIndex: int64(len(s.chunks)) - 1, Done: s.closed}, nil
}

func (w *memWorld) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	var names []string
	for name := range w.streams[p.RunID] {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}
