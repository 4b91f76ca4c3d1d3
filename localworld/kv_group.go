package localworld

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommitter is group commit for bbolt (SyncBatch): concurrent write
// transactions are run one after the other inside a single bbolt
// transaction, so they share its two fsyncs, and each caller returns only
// once that transaction is durable.
//
// It is leader-based rather than timer-based like bbolt's DB.Batch: the
// first caller commits at once, taking every call queued so far; calls that
// arrive during its commit queue up and the next leader takes them all. A
// lone writer therefore never waits, where DB.Batch makes every batch wait
// MaxBatchDelay first (in practice at least a millisecond: Go timers are not
// finer than the scheduler's sleep) and was slower than SyncEveryCommit for
// a sequential writer. Under concurrency, batches form by themselves, as
// large as the number of writers waiting on the fsync.
//
// As with DB.Batch, a function may run more than once: when one call of a
// batch fails, the transaction is rolled back, the others are retried in a
// new one, and the failed call is re-run alone, by its own goroutine, so its
// error is judged against the store without the others' writes.
type groupCommitter struct {
	db *bolt.DB

	mu      sync.Mutex
	queue   []*groupCall
	leading bool // some goroutine is committing a batch
}

type groupCall struct {
	fn   func(*bolt.Tx) error
	done chan error // receives errLead, errSolo or the outcome
}

var (
	errLead = errors.New("lead the next batch")
	errSolo = errors.New("run alone")
)

func (g *groupCommitter) update(fn func(*bolt.Tx) error) error {
	call := &groupCall{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, call)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	for {
		if lead {
			g.lead()
		}
		switch err := <-call.done; err {
		case errLead:
			lead = true
		case errSolo:
			return g.db.Update(fn)
		default:
			return err
		}
	}
}

// lead commits everything queued, then hands leadership to the first call
// queued meanwhile, or gives it up.
func (g *groupCommitter) lead() {
	// Let the writers the last commit just released queue their next
	// transaction first: without this, batches alternate between full and
	// half empty (measured: 4.4 calls per commit with 8 writers, 7.3 with
	// it). With no other goroutine runnable it returns at once.
	runtime.Gosched()
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	g.run(batch)

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].done <- errLead
	} else {
		g.leading = false
	}
	g.mu.Unlock()
}

// run commits batch, retrying without a failed call until one commit
// succeeds or the batch is empty; every call gets exactly one final answer.
func (g *groupCommitter) run(batch []*groupCall) {
	for len(batch) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, c := range batch {
				if err := callSafely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range batch {
				c.done <- err // nil, or the commit's own failure (I/O)
			}
			return
		}
		batch[failed].done <- errSolo
		batch = append(batch[:failed], batch[failed+1:]...)
	}
}

// callSafely runs fn, turning a panic into an error so that one caller's
// panic does not strand the rest of its batch; the caller re-runs fn alone
// and panics in its own goroutine.
func callSafely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(tx)
}
