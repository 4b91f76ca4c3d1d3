package localworld

import (
	"bytes"
	"maps"
	"sync"

	"github.com/skeinflow/skein/world"
)

// decodedCache keeps the run and step entities the last commits wrote,
// decoded, beside the stored bytes they stand for, so that the next commit
// to the run reads them without decoding the JSON again (a serial step's
// commit reads back the run and the step the commit before wrote). An
// entry answers a read only while the store holds those very bytes: a
// stored value is never changed in place (a put stores a new copy), so the
// same slice is the same value, and any other write of the key (a lease
// renewal, a rolled-back commit's, a replay, the value's move to disk)
// makes the entry miss. The store tells its version of a value without
// reading it (kvTx.version), so a hit reads nothing from a file either. Entries
// are values: a read gets its own copy of the entity (nested fields are
// shared and, as everywhere an entity is copied, never changed in place);
// an entry holds its own copies of the payloads and nested structs of the
// entity a commit wrote (ownStep, ownRun), which came from the caller.
type decodedCache struct {
	mu    sync.Mutex
	runs  decodedMap[world.Run]
	steps decodedMap[world.Step]
	// hits and misses count the reads served and decoded (for tests).
	hits, misses int
}

// decodedMap holds one bucket's entries, by key, and what they cost.
type decodedMap[T any] struct {
	m    map[string]decoded[T]
	cost int // the stored sizes of the entries' values, summed
}

type decoded[T any] struct {
	ver  *byte
	ent  T
	cost int
}

// A map starts again when it would hold more than maxDecoded entries or
// than maxDecodedCost bytes of stored values (an entity decoded takes
// about twice its JSON). Wide enough for the steps of a fan-out of
// several thousand in flight at once, which background executors start
// and record one batch at a time.
const (
	maxDecoded     = 16384
	maxDecodedCost = 8 << 20
)

// getDecoded reads the entity stored under k in bucket b (nil when there
// is none), from m when c (nil: no cache) holds its value.
func getDecoded[T any](tx kvTx, b bucketID, k []byte, c *decodedCache, m *decodedMap[T]) (*T, error) {
	var ver *byte
	var size int
	if c != nil {
		if ver, size = tx.version(b, k); ver == nil {
			return nil, nil
		}
		c.mu.Lock()
		e, ok := m.m[string(k)]
		hit := ok && e.ver == ver
		if hit {
			c.hits++
		} else {
			c.misses++
		}
		c.mu.Unlock()
		if hit {
			x := e.ent
			return &x, nil
		}
	}
	x, err := getJSON[T](tx, b, k)
	if c != nil && x != nil {
		keepDecoded(c, m, k, ver, size, x)
	}
	return x, err
}

// keepDecoded notes that the stored value of key k whose version is ver
// and size size is x (nil: forget k).
func keepDecoded[T any](c *decodedCache, m *decodedMap[T], k []byte, ver *byte, size int, x *T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := m.m[string(k)]; ok {
		m.cost -= old.cost
		delete(m.m, string(k))
	}
	if x == nil {
		return
	}
	if m.m == nil || len(m.m) >= maxDecoded || m.cost+size > maxDecodedCost {
		m.m, m.cost = map[string]decoded[T]{}, 0
	}
	m.m[string(k)] = decoded[T]{ver: ver, ent: *x, cost: size}
	m.cost += size
}

// run reads a run as getRun does, from the cache when it holds its value.
func (c *decodedCache) run(tx kvTx, id string) (*world.Run, error) {
	return getRunVia(tx, id, c)
}

// step reads a step as getStep does, from the cache when it holds its
// value.
func (c *decodedCache) step(tx kvTx, runID, stepID string) (*world.Step, error) {
	return getStepVia(tx, runID, stepID, c)
}

// wroteRun notes the run a commit stored (putRun): the value now under its
// key.
func (c *decodedCache) wroteRun(tx kvTx, r *world.Run) {
	k := runKey(r.RunID)
	if ver, size := tx.version(bRuns, k); ver != nil {
		keepDecoded(c, &c.runs, k, ver, size, ownRun(r))
	}
}

// wroteStep notes the step a commit stored (putStep). A step that has
// ended is rarely read again (its run reads its events): the cache
// forgets it, which keeps a long run's or a wide fan-out's ended steps
// out of memory.
func (c *decodedCache) wroteStep(tx kvTx, st *world.Step) {
	k := stepKey(st.RunID, st.StepID)
	ver, size := tx.version(bSteps, k)
	if ver == nil || st.Status.Terminal() {
		keepDecoded[world.Step](c, &c.steps, k, ver, size, nil)
		return
	}
	keepDecoded(c, &c.steps, k, ver, size, ownStep(st))
}

// ownStep and ownRun copy an entity a commit wrote with its own copies of
// what its writer could change in place: payloads, maps, nested structs
// (a step's input is the caller's event input, which the caller may reuse;
// the copy in the cache must stay what was stored).
func ownStep(st *world.Step) *world.Step {
	c := *st
	c.Input, c.Output, c.Error = bytes.Clone(st.Input), bytes.Clone(st.Output), ownError(st.Error)
	if st.Compensation != nil {
		comp := *st.Compensation
		comp.Error = ownError(comp.Error)
		c.Compensation = &comp
	}
	return &c
}

func ownRun(r *world.Run) *world.Run {
	c := *r
	c.Input, c.Output, c.ExecutionContext = bytes.Clone(r.Input), bytes.Clone(r.Output), bytes.Clone(r.ExecutionContext)
	c.Error, c.Attributes = ownError(r.Error), maps.Clone(r.Attributes)
	if r.Hold != nil {
		h := *r.Hold
		h.Error = ownError(h.Error)
		c.Hold = &h
	}
	return &c
}

func ownError(e *world.ErrorData) *world.ErrorData {
	if e == nil {
		return nil
	}
	c := *e
	c.Details, c.Cause = bytes.Clone(e.Details), ownError(e.Cause)
	if e.Errors != nil {
		c.Errors = make([]*world.ErrorData, len(e.Errors))
		for i, x := range e.Errors {
			c.Errors[i] = ownError(x)
		}
	}
	return &c
}
