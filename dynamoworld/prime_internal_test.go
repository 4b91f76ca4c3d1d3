package dynamoworld

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skeinflow/skein/world"
)

// TestPrimeNeedsTheWholeChain: a log read caches the run only when its
// commits chain from the first to the last and the head read after them
// agrees with their fold. Commits are taken from what a World wrote (on a
// fake DynamoDB), then served to another World with pieces missing.
func TestPrimeNeedsTheWholeChain(t *testing.T) {
	ctx := context.Background()
	ddb := &fakeDDB{}
	a := newFakeWorld(t, ddb, newFakeS3(), nil)
	ids := world.NewIDSource(nil, nil)
	run := ids.New(world.PrefixRun)
	app := func(evs ...world.EventInput) *world.AppendResult {
		t.Helper()
		res, err := a.Append(ctx, &world.AppendParams{RunID: run, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	app(world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	s1, s2 := ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	app(world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "a"}}, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}})
	app(world.EventInput{CorrelationID: s1, Data: &world.StepCompleted{Result: json.RawMessage(`1`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "b"}}, world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	last := app(world.EventInput{CorrelationID: ids.New(world.PrefixWait), Data: &world.WaitCreated{ResumeAt: time.Now()}})

	items := map[itemKey]item{}
	var commits []itemKey
	for _, tx := range ddb.writes {
		for _, ti := range tx.TransactItems {
			if ti.Put != nil && strings.HasPrefix(getS(ti.Put.Item, attrSK), prefCommit) {
				k := itemKey{getS(ti.Put.Item, attrPK), getS(ti.Put.Item, attrSK)}
				items[k] = ti.Put.Item
				commits = append(commits, k)
			}
		}
	}
	if len(commits) != 4 {
		t.Fatalf("%d commits written, want 4", len(commits))
	}
	head := encodeRunHead(last.Run, 0).it
	for _, tc := range []struct {
		name   string
		change func(map[itemKey]item)
		want   bool
	}{
		{"whole", func(map[itemKey]item) {}, true},
		{"first commit missing", func(m map[itemKey]item) { delete(m, commits[0]) }, false},
		{"middle commit missing", func(m map[itemKey]item) { delete(m, commits[2]) }, false},
		{"no head", func(m map[itemKey]item) { delete(m, runHeadKey(run)) }, false},
		{"head of another status", func(m map[itemKey]item) {
			h := encodeRunHead(&world.Run{RunID: run, WorkflowName: "wf", Status: world.RunStatusCompleted, CreatedAt: last.Run.CreatedAt}, 0).it
			m[runHeadKey(run)] = h
		}, false},
		{"commit of another count", func(m map[itemKey]item) {
			c := cloneItem(m[commits[1]])
			setN(c, aCount, 3)
			m[commits[1]] = c
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[itemKey]item{runHeadKey(run): head}
			for k, v := range items {
				m[k] = v
			}
			tc.change(m)
			rd := &fakeDDB{}
			serveItems(rd, m)
			b := newFakeWorld(t, rd, newFakeS3(), nil)
			if _, err := b.ListEvents(ctx, &world.ListEventsParams{RunID: run}); err != nil && tc.want {
				t.Fatal(err)
			}
			s := b.s.cache.get(run)
			if got := s != nil && s.complete; got != tc.want {
				t.Fatalf("cached a complete snapshot: %v, want %v", got, tc.want)
			}
			if tc.want {
				if s.run.LastSeq != last.Run.LastSeq || s.run.Status != world.RunStatusRunning || len(s.waits) != 1 ||
					s.steps[s1].Status != world.StepStatusCompleted || s.steps[s2].Status != world.StepStatusRunning {
					t.Fatalf("cached snapshot: run %+v, steps %v, waits %v", s.run, s.steps, s.waits)
				}
				if _, lazy := s.lazy[s2]; !lazy || s.stepIDs == nil || !s.stepIDs.has(s1) || !s.stepIDs.has(s2) {
					t.Fatalf("cached snapshot: lazy %v, step IDs %v", s.lazy, s.stepIDs)
				}
			}
		})
	}
}

func cloneItem(it item) item {
	c := make(item, len(it))
	for k, v := range it {
		c[k] = v
	}
	return c
}

// TestRunEndCounts: a World that did not see a run from its start ends it
// with one Query of the run's entities (its hooks and waits, and the
// write marks runEndItems checks), whatever the run's newest commit
// counts. A commit without counts is an item of another format: the
// Append fails and writes nothing.
func TestRunEndCounts(t *testing.T) {
	ctx := context.Background()
	ids := world.NewIDSource(nil, nil)
	for _, tc := range []struct {
		name    string
		counts  func(it item) // sets the newest commit's counts
		queries int
		wantErr bool
	}{
		{"none", func(it item) { setCounts(it, 0, 0) }, 1, false},
		{"uncounted", func(item) {}, 0, true},
		{"a wait", func(it item) { setCounts(it, 0, 1) }, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := ids.New(world.PrefixRun)
			now := time.Now().UTC().Round(0)
			r := &world.Run{RunID: run, WorkflowName: "wf", Status: world.RunStatusRunning, LastSeq: 2, CreatedAt: now, UpdatedAt: now, StartedAt: now}
			body, err := encodeRunBody(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			evs := []world.Event{
				{RunID: run, EventID: ids.New(world.PrefixEvent), Seq: 1, CreatedAt: now, Data: &world.RunCreated{WorkflowName: "wf"}},
				{RunID: run, EventID: ids.New(world.PrefixEvent), Seq: 2, CreatedAt: now, Data: &world.RunStarted{}},
			}
			commit, _, err := encodeCommit(nil, run, 0, evs, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			tc.counts(commit.it)
			setS(commit.it, aRunStatus, string(world.RunStatusRunning))
			ddb := &fakeDDB{}
			serveItems(ddb, map[itemKey]item{runHeadKey(run): encodeRunHead(r, 0).it, runBodyKey(run): body.it, commitKey(run, 0): commit.it})
			serve, queries := ddb.query, 0
			ddb.query = func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				if getS(in.ExpressionAttributeValues, ":v1") == prefHook {
					queries++
				}
				return serve(in)
			}
			w := newFakeWorld(t, ddb, newFakeS3(), nil)
			_, err = w.Append(ctx, &world.AppendParams{RunID: run, IfLastSeq: 2, Events: []world.EventInput{{Data: &world.RunCompleted{}}}})
			if tc.wantErr {
				if err == nil || len(ddb.writes) != 0 {
					t.Fatalf("a commit without counts: %v, %d transactions; want an error and none", err, len(ddb.writes))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if queries != tc.queries {
				t.Fatalf("%d queries for the run's entities, want %d", queries, tc.queries)
			}
			last := ddb.writes[len(ddb.writes)-1]
			i := indexOf(last, commitKey(run, 2), "put")
			if h, wt, err := decodeCounts(last.TransactItems[i].Put.Item); err != nil || h != 0 || wt != 0 {
				t.Fatalf("the run's end counts %d hooks and %d waits (%v), want 0 and 0", h, wt, err)
			}
		})
	}
}

// TestRunStatusFromTheNewestCommit: a Query is read committed, so the run
// head it returns may be older than the newest commit it returns (a
// run's end landing while it ran); the read is made again, and the run's
// status is the commit's, the one consistent with the fence, and a commit
// judged on the run refuses what a finished run refuses. (The same
// disagreement on the second read is damage: TestCommitRunStatusAgreesWithHead.)
func TestRunStatusFromTheNewestCommit(t *testing.T) {
	ctx := context.Background()
	ids := world.NewIDSource(nil, nil)
	run := ids.New(world.PrefixRun)
	now := time.Now().UTC().Round(0)
	r := &world.Run{RunID: run, WorkflowName: "wf", Status: world.RunStatusRunning, LastSeq: 2, CreatedAt: now, UpdatedAt: now, StartedAt: now}
	body, err := encodeRunBody(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(seq int64, d world.EventData) world.Event {
		return world.Event{RunID: run, EventID: ids.New(world.PrefixEvent), Seq: seq, CreatedAt: now, Data: d}
	}
	first, _, err := encodeCommit(nil, run, 0, []world.Event{ev(1, &world.RunCreated{WorkflowName: "wf"}), ev(2, &world.RunStarted{})}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	setS(first.it, aRunStatus, string(world.RunStatusRunning))
	setCounts(first.it, 0, 0)
	end, _, err := encodeCommit(nil, run, 2, []world.Event{ev(3, &world.RunCompleted{})}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	setS(end.it, aRunStatus, string(world.RunStatusCompleted))
	setCounts(end.it, 0, 0)
	ddb := &fakeDDB{}
	items := map[itemKey]item{
		runHeadKey(run): encodeRunHead(r, 0).it, // as before the end
		runBodyKey(run): body.it, commitKey(run, 0): first.it, commitKey(run, 2): end.it,
	}
	serveItems(ddb, items)
	// The first Query saw the head as before the end; the end's transaction
	// (which writes the head with the commit) has landed for the next one.
	ended := *r
	ended.Status, ended.LastSeq = world.RunStatusCompleted, 3
	query := ddb.query
	ddb.query = func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		out, err := query(in)
		items[runHeadKey(run)] = encodeRunHead(&ended, 0).it
		return out, err
	}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	got, err := w.GetRun(ctx, &world.GetRunParams{RunID: run})
	if err != nil || got.Status != world.RunStatusCompleted || got.LastSeq != 3 {
		t.Fatalf("GetRun: %+v, %v; want completed at 3", got, err)
	}
	_, err = w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: ids.New(world.PrefixStep), Data: &world.StepCreated{StepName: "late"}}}})
	if !errors.Is(err, world.ErrConflict) || len(ddb.writes) != 0 {
		t.Fatalf("a step created on the run: %v, %d transactions; want the refusal of a finished run and none", err, len(ddb.writes))
	}
}
