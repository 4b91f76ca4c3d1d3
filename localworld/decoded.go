package localworld

import (
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
// shared and, as everywhere an entity is copied, never changed in place).
type decodedCache struct {
	mu    sync.Mutex
	runs  decodedMap[world.Run]
	steps decodedMap[world.Step]
	// hits and misses count the reads served and decoded (for tests).
	hits, misses int
}

// decodedMap holds one bucket's entries, by key.
type decodedMap[T any] map[string]decoded[T]

type decoded[T any] struct {
	ver *byte
	ent T
}

// maxDecoded bounds each map; past it the map starts again.
const maxDecoded = 1024

// getDecoded reads the entity stored under k in bucket b (nil when there
// is none), from m when c (nil: no cache) holds its value.
func getDecoded[T any](tx kvTx, b bucketID, k []byte, c *decodedCache, m *decodedMap[T]) (*T, error) {
	var ver *byte
	if c != nil {
		if ver = tx.version(b, k); ver == nil {
			return nil, nil
		}
		c.mu.Lock()
		e, ok := (*m)[string(k)]
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
		keepDecoded(c, m, k, ver, x)
	}
	return x, err
}

// keepDecoded notes that the stored value of key k whose version is ver
// is x.
func keepDecoded[T any](c *decodedCache, m *decodedMap[T], k []byte, ver *byte, x *T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil || len(*m) >= maxDecoded {
		*m = decodedMap[T]{}
	}
	(*m)[string(k)] = decoded[T]{ver: ver, ent: *x}
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
	if ver := tx.version(bRuns, k); ver != nil {
		keepDecoded(c, &c.runs, k, ver, r)
	}
}

// wroteStep notes the step a commit stored (putStep).
func (c *decodedCache) wroteStep(tx kvTx, st *world.Step) {
	k := stepKey(st.RunID, st.StepID)
	if ver := tx.version(bSteps, k); ver != nil {
		keepDecoded(c, &c.steps, k, ver, st)
	}
}
