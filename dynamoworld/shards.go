package dynamoworld

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"github.com/skeinflow/skein/world"
)

// Index shards. Every run writes the index keys of its head (gs1: all runs,
// gs2: its workflow's runs, gs3: its status's runs), and every active hook
// the key of gs1's hook listing. DynamoDB takes about 1,000 write units a
// second on one partition key value, of a table or of an index, and a
// throttled index throttles the table's writes. So each of those keys is
// spread over indexShards values, the shard a hash of the run's (or the
// hook's) ID: "run07", "wf07#<workflow>", "st07#<status>", "hook07". A
// listing queries every shard (concurrently) and merges their pages by the
// index's sort key (created time, then ID), so it stays ordered and its
// cursor is a position in that order. Tables moved from version 1 also
// hold runs and hooks under the unsharded keys ("run", "wf#<workflow>",
// "st#<status>", "hook"), which the listing reads as one more shard; a
// legacy run's head keeps its unsharded gs1 and gs2 keys, and moves to a
// sharded gs3 key at its next status.

// indexShards is how many values each shared index key is spread over.
const indexShards = 32

// shardOf is the shard of a run or hook ID.
func shardOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % indexShards)
}

// The sharded index keys; a legacy key (a version 1 table's) is what the
// function returns for shard -1.
func g1RunKey(shard int) string {
	if shard < 0 {
		return g1Run
	}
	return fmt.Sprintf("%s%02d", g1Run, shard)
}

func g1HookKey(shard int) string {
	if shard < 0 {
		return g1Hook
	}
	return fmt.Sprintf("%s%02d", g1Hook, shard)
}

func g2Key(workflow string) func(int) string {
	return func(shard int) string {
		if shard < 0 {
			return "wf#" + workflow
		}
		return fmt.Sprintf("wf%02d#%s", shard, workflow)
	}
}

func g3Key(status world.RunStatus) func(int) string {
	return func(shard int) string {
		if shard < 0 {
			return "st#" + string(status)
		}
		return fmt.Sprintf("st%02d#%s", shard, status)
	}
}

// shardKeys lists every value of a sharded key, and the legacy one when
// the table may hold it.
func (w *store) shardKeys(key func(int) string) []string {
	out := make([]string, 0, indexShards+1)
	for s := range indexShards {
		out = append(out, key(s))
	}
	if w.legacyIndex {
		out = append(out, key(-1))
	}
	return out
}

// queryShards is query over the partitions pks of q's index (q.pk is
// ignored): the first q.limit items of all of them in q's order (by
// q.skAttr), and whether there are more.
func (w *store) queryShards(ctx context.Context, q pageQuery, pks []string) ([]item, bool, error) {
	type page struct {
		items []item
		more  bool
		err   error
	}
	pages := make([]page, len(pks))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, pk := range pks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sq := q
			sq.pk = pk
			pages[i].items, pages[i].more, pages[i].err = w.query(ctx, sq)
		})
	}
	wg.Wait()
	var all []item
	more := false
	for _, p := range pages {
		if p.err != nil {
			return nil, false, p.err
		}
		all = append(all, p.items...)
		more = more || p.more
	}
	slices.SortFunc(all, func(a, b item) int {
		c := strings.Compare(getS(a, q.skAttr), getS(b, q.skAttr))
		if q.desc {
			return -c
		}
		return c
	})
	if len(all) > q.limit {
		all, more = all[:q.limit], true
	}
	return all, more, nil
}
