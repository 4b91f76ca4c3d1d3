package worldtest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func queueCases() []testCase {
	return []testCase{
		{"enqueue_receive_ack", testQueueBasic},
		{"ack_removes", testQueueAckRemoves},
		{"delay_honoured", testQueueDelay},
		{"release_redelivers", testQueueRelease},
		{"release_delay_honoured", testQueueReleaseDelay},
		{"visibility_lapse_redelivers", testQueueVisibility},
		{"extend_keeps_delivery", testQueueExtend},
		{"idempotency_key_dedupes", testQueueDedupe},
		{"idempotency_key_single_delivery", testQueueDedupeDelivery},
		{"idempotency_key_stranded_claim", testQueueStrandedClaim},
		{"concurrent_receivers_exclusive", testQueueConcurrentReceivers},
		{"receive_empty_returns", testQueueReceiveEmpty},
	}
}

// needConsumer skips the case when the World has no consumer side.
func (f *fixture) needConsumer() {
	f.t.Helper()
	if f.c == nil {
		f.t.Skip("worldtest: the Subject has no Consumer; queue delivery is not testable here")
	}
}

func (f *fixture) enqueue(body string, delay time.Duration, key string) *world.EnqueueResult {
	f.t.Helper()
	r, err := f.w.Enqueue(f.ctx, &world.EnqueueParams{Body: []byte(body), Delay: delay, IdempotencyKey: key})
	if err != nil {
		f.t.Fatalf("Enqueue(%q): %v", body, err)
	}
	if r == nil || r.MessageID == "" {
		f.t.Fatalf("Enqueue(%q): result %+v has no MessageID", body, r)
	}
	return r
}

func (f *fixture) receive(max int, wait, visibility time.Duration) []world.Delivery {
	f.t.Helper()
	ds, err := f.c.Receive(f.ctx, &world.ReceiveParams{Max: max, Wait: wait, Visibility: visibility})
	if err != nil {
		f.t.Fatalf("Receive: %v", err)
	}
	if len(ds) > max {
		f.t.Fatalf("Receive(Max %d) returned %d messages", max, len(ds))
	}
	return ds
}

// receiveOne receives until one message arrives or within elapses, and
// returns it with the time Receive returned.
func (f *fixture) receiveOne(within, visibility time.Duration) (world.Delivery, time.Time) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		wait := min(time.Until(deadline), time.Second)
		if ds := f.receive(1, wait, visibility); len(ds) > 0 {
			return ds[0], time.Now()
		}
	}
	f.t.Fatalf("no message received within %v", within)
	return world.Delivery{}, time.Time{}
}

// wantNothing fails if a message is received during d.
func (f *fixture) wantNothing(d, visibility time.Duration, what string) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ds := f.receive(1, time.Until(deadline), visibility); len(ds) > 0 {
			f.t.Fatalf("%s: received message %s (attempt %d, %q), want none", what, ds[0].MessageID, ds[0].Attempt, ds[0].Body)
		}
	}
}

func (f *fixture) ack(d world.Delivery) {
	f.t.Helper()
	if err := f.c.Ack(f.ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
		f.t.Fatalf("Ack(%s): %v", d.MessageID, err)
	}
}

// within bounds the wait for a message due after delay: only a failing
// case waits it out, so it holds on a busy machine.
func (f *fixture) within(delay time.Duration) time.Duration { return delay + f.d(15*time.Second) }

func testQueueBasic(t *testing.T, f *fixture) {
	f.needConsumer()
	body := "hello \x00\xff world"
	e := f.enqueue(body, 0, "")
	d, _ := f.receiveOne(f.within(0), time.Minute)
	if d.MessageID != e.MessageID || !bytes.Equal(d.Body, []byte(body)) || d.Attempt != 1 || d.Receipt == "" {
		t.Fatalf("delivery %+v, want message %s with body %q, attempt 1 and a receipt", d, e.MessageID, body)
	}
	if e.Duplicate {
		t.Fatal("Enqueue without an idempotency key reported Duplicate")
	}
	f.ack(d)
	other := f.enqueue("second", 0, "")
	if other.MessageID == e.MessageID {
		t.Fatalf("two messages share MessageID %s", e.MessageID)
	}
}

func testQueueAckRemoves(t *testing.T, f *fixture) {
	f.needConsumer()
	f.enqueue("ack me", 0, "")
	vis := f.d(200 * time.Millisecond)
	d, _ := f.receiveOne(f.within(0), vis)
	f.ack(d)
	f.wantNothing(vis+f.d(500*time.Millisecond), time.Minute, "after Ack and past the visibility timeout")
}

func testQueueDelay(t *testing.T, f *fixture) {
	f.needConsumer()
	delay := f.d(300 * time.Millisecond)
	start := time.Now()
	e := f.enqueue("later", delay, "")
	d, at := f.receiveOne(f.within(delay), time.Minute)
	if d.MessageID != e.MessageID {
		t.Fatalf("received %s, want %s", d.MessageID, e.MessageID)
	}
	if early := start.Add(delay).Sub(at); early > 0 {
		t.Fatalf("a message enqueued with delay %v was received %v early", delay, early)
	}
}

func testQueueRelease(t *testing.T, f *fixture) {
	f.needConsumer()
	e := f.enqueue("retry me", 0, "")
	d1, _ := f.receiveOne(f.within(0), time.Minute)
	if err := f.c.Release(f.ctx, &world.ReleaseParams{Receipt: d1.Receipt}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	d2, _ := f.receiveOne(f.within(0), time.Minute)
	if d2.MessageID != e.MessageID || d2.Attempt != d1.Attempt+1 || !bytes.Equal(d2.Body, d1.Body) {
		t.Fatalf("redelivery after Release: %+v, want message %s attempt %d with the same body", d2, e.MessageID, d1.Attempt+1)
	}
	f.ack(d2)
}

func testQueueReleaseDelay(t *testing.T, f *fixture) {
	f.needConsumer()
	f.enqueue("retry later", 0, "")
	d1, _ := f.receiveOne(f.within(0), time.Minute)
	delay := f.d(300 * time.Millisecond)
	start := time.Now()
	if err := f.c.Release(f.ctx, &world.ReleaseParams{Receipt: d1.Receipt, Delay: delay}); err != nil {
		t.Fatalf("Release with delay: %v", err)
	}
	d2, at := f.receiveOne(f.within(delay), time.Minute)
	if d2.MessageID != d1.MessageID || d2.Attempt != d1.Attempt+1 {
		t.Fatalf("redelivery: %+v, want message %s attempt %d", d2, d1.MessageID, d1.Attempt+1)
	}
	if early := start.Add(delay).Sub(at); early > 0 {
		t.Fatalf("a message released with delay %v was redelivered %v early", delay, early)
	}
}

// Extend keeps a delivery hidden past the Visibility it was received with,
// as often as it is called, and the same receipt then acks it.
func testQueueExtend(t *testing.T, f *fixture) {
	f.needConsumer()
	e := f.enqueue("long work", 0, "")
	vis := f.d(time.Second)
	d1, _ := f.receiveOne(f.within(0), vis)
	end := time.Now().Add(3 * vis)
	for time.Now().Before(end) {
		extended := time.Now() // hidden at least until extended+vis
		if err := f.c.Extend(f.ctx, &world.ExtendParams{Receipt: d1.Receipt, Visibility: vis}); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		// A short poll, then a pause: a long poll could outlast the extension
		// where visibility has whole-second granularity (SQS).
		ds, err := f.c.Receive(f.ctx, &world.ReceiveParams{Max: 1, Visibility: time.Minute})
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(ds) > 0 {
			if time.Since(extended) < vis {
				t.Fatalf("redelivered while extended: %+v", ds[0])
			}
			// The machine stalled past the extension before this poll: the
			// redelivery is right. Extend the new delivery from here on.
			t.Logf("the machine stalled %v past an extension of %v; following the redelivery", time.Since(extended), vis)
			d1 = ds[0]
			if err := f.c.Extend(f.ctx, &world.ExtendParams{Receipt: d1.Receipt, Visibility: vis}); err != nil {
				t.Fatalf("Extend: %v", err)
			}
		}
		time.Sleep(vis / 3)
	}
	f.ack(d1)
	if ds, err := f.c.Receive(f.ctx, &world.ReceiveParams{Max: 1, Wait: 2 * vis, Visibility: time.Minute}); err != nil || len(ds) > 0 {
		t.Fatalf("after Ack with the extended delivery's receipt (%s): %+v %v, want nothing", e.MessageID, ds, err)
	}
}

func testQueueVisibility(t *testing.T, f *fixture) {
	f.needConsumer()
	e := f.enqueue("lapse", 0, "")
	vis := f.d(300 * time.Millisecond)
	start := time.Now()
	d1, _ := f.receiveOne(f.within(0), vis)
	d2, at := f.receiveOne(f.within(vis), time.Minute)
	if d2.MessageID != e.MessageID || d2.Attempt != d1.Attempt+1 || !bytes.Equal(d2.Body, d1.Body) {
		t.Fatalf("redelivery after the visibility timeout: %+v, want message %s attempt %d", d2, e.MessageID, d1.Attempt+1)
	}
	if early := start.Add(vis).Sub(at); early > 0 {
		t.Fatalf("a message received with visibility %v was delivered again %v before it lapsed", vis, early)
	}
	f.ack(d2)
}

func testQueueDedupe(t *testing.T, f *fixture) {
	key := "dedupe-" + ids.New("")
	first := f.enqueue("one", 0, key)
	if first.Duplicate {
		t.Fatal("the first Enqueue with a key reported Duplicate")
	}
	second := f.enqueue("two", 0, key)
	if !second.Duplicate || second.MessageID != first.MessageID {
		t.Fatalf("the second Enqueue with key %q: %+v, want Duplicate and MessageID %s", key, second, first.MessageID)
	}
	other := f.enqueue("three", 0, key+"-other")
	if other.Duplicate || other.MessageID == first.MessageID {
		t.Fatalf("Enqueue with another key: %+v, want a new message", other)
	}
}

func testQueueDedupeDelivery(t *testing.T, f *fixture) {
	f.needConsumer()
	key := "dedupe-" + ids.New("")
	first := f.enqueue("one", 0, key)
	f.enqueue("two", 0, key)
	d, _ := f.receiveOne(f.within(0), time.Minute)
	if d.MessageID != first.MessageID || string(d.Body) != "one" {
		t.Fatalf("delivery %+v, want the first message %s", d, first.MessageID)
	}
	f.wantNothing(f.d(500*time.Millisecond), time.Minute, "a second delivery for a deduplicated key")
}

// A sender that claimed an idempotency key and died before sending
// (Subject.AbandonClaim) leaves no message: an Enqueue under the key must
// not answer Duplicate, or a caller that acknowledges its own input on
// that answer (an executor sending a message on) loses the work. It fails
// with world.ErrKeyPending, sending nothing, or sends; once the clock has
// moved an hour on, it sends. Either way the message arrives, once, and
// only then is the key's next Enqueue a Duplicate.
func testQueueStrandedClaim(t *testing.T, f *fixture) {
	f.needConsumer()
	if f.abandon == nil {
		t.Skip("the World's Enqueue claims and sends in one step (no Subject.AbandonClaim): no claim can be stranded")
	}
	if f.clock == nil {
		t.Skip("the World has no Subject.Clock to move past a stranded claim")
	}
	key := "stranded-" + ids.New("")
	if err := f.abandon(f.ctx, key); err != nil {
		t.Fatalf("AbandonClaim(%q): %v", key, err)
	}
	var sent string
	r, err := f.w.Enqueue(f.ctx, &world.EnqueueParams{Body: []byte("one"), IdempotencyKey: key})
	switch {
	case errors.Is(err, world.ErrKeyPending):
	case err != nil:
		t.Fatalf("Enqueue under a stranded claim: %v, want a send or world.ErrKeyPending", err)
	case r.Duplicate:
		t.Fatalf("Enqueue under a claim whose sender died before sending: Duplicate of %s, a message never sent (lost by a caller that acknowledges its input on that answer); want world.ErrKeyPending or a send", r.MessageID)
	default:
		sent = r.MessageID
	}
	if sent == "" {
		f.clock.Advance(time.Hour)
		r := f.enqueue("one", 0, key)
		if r.Duplicate {
			t.Fatalf("Enqueue an hour after a stranded claim: Duplicate of %s, a message never sent; want the claim taken over and the message sent", r.MessageID)
		}
		sent = r.MessageID
	}
	if again := f.enqueue("two", 0, key); !again.Duplicate || again.MessageID != sent {
		t.Fatalf("Enqueue after the send under key %q: %+v, want Duplicate of %s", key, again, sent)
	}
	d, _ := f.receiveOne(f.within(0), time.Minute)
	if d.MessageID != sent || string(d.Body) != "one" {
		t.Fatalf("delivery %+v, want message %s with body %q", d, sent, "one")
	}
	f.ack(d)
	f.wantNothing(f.d(500*time.Millisecond), time.Minute, "a second message under one idempotency key")
}

func testQueueConcurrentReceivers(t *testing.T, f *fixture) {
	f.needConsumer()
	n := 2 * f.o.Racers
	want := map[string]bool{}
	for i := range n {
		want[f.enqueue(fmt.Sprint("m", i), 0, "").MessageID] = true
	}
	var mu sync.Mutex
	got := map[string]int{}
	var all []world.Delivery
	deadline := time.Now().Add(f.within(0))
	errs := race(f.o.Racers, func(int) error {
		for time.Now().Before(deadline) {
			mu.Lock()
			done := len(got) >= n
			mu.Unlock()
			if done {
				return nil
			}
			ds, err := f.c.Receive(f.ctx, &world.ReceiveParams{Max: 3, Wait: f.d(100 * time.Millisecond), Visibility: time.Minute})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, d := range ds {
				got[d.MessageID]++
				all = append(all, d)
			}
			mu.Unlock()
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("receiver %d: %v", i, err)
		}
	}
	for id, c := range got {
		if c > 1 {
			t.Fatalf("message %s was delivered %d times within its visibility timeout", id, c)
		}
		if !want[id] {
			t.Fatalf("received unknown message %s", id)
		}
	}
	if len(got) != n {
		t.Fatalf("%d of %d messages received", len(got), n)
	}
	for _, d := range all {
		f.ack(d)
	}
}

func testQueueReceiveEmpty(t *testing.T, f *fixture) {
	f.needConsumer()
	start := time.Now()
	ds := f.receive(5, f.d(100*time.Millisecond), time.Minute)
	if len(ds) != 0 {
		t.Fatalf("Receive on an empty queue returned %d messages", len(ds))
	}
	// Real time is the subject: Wait bounds the call (SQS rounds it up to
	// a second), it does not run to the queue's longest poll.
	if took := time.Since(start); took > f.d(10*time.Second) {
		t.Fatalf("Receive with Wait %v on an empty queue took %v", f.d(100*time.Millisecond), took)
	}
}
