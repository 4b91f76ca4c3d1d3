package dynamoworld_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// hookTable is a table on the emulators, Worlds opened on it (each with
// its own cache: a fresh reader) and raw edits of its items, as the
// trial's tok.py made them.
type hookTable struct {
	c   dynamoworld.Clients
	cfg dynamoworld.Config
}

func newHookTable(t *testing.T) *hookTable {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	return &hookTable{c: c, cfg: dynamotest.Config(c, r, url)}
}

func (f *hookTable) open(t *testing.T) *dynamoworld.World {
	t.Helper()
	w, err := dynamoworld.New(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

type rawItem = map[string]types.AttributeValue

func key(pk, sk string) rawItem {
	return rawItem{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

func tokenPK(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "t#" + hex.EncodeToString(sum[:])
}

func (f *hookTable) get(t *testing.T, pk, sk string) rawItem {
	t.Helper()
	out, err := f.c.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.cfg.Table), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("get %s/%s: %v (found %v)", pk, sk, err, len(out.Item) > 0)
	}
	return out.Item
}

func (f *hookTable) put(t *testing.T, it rawItem) {
	t.Helper()
	if _, err := f.c.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.cfg.Table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

func (f *hookTable) del(t *testing.T, pk, sk string) {
	t.Helper()
	_, err := f.c.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.cfg.Table), Key: key(pk, sk), ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatalf("delete %s/%s: %v", pk, sk, err)
	}
}

// edit reads an item, changes it (set: S values; a nil value removes the
// attribute) and puts it back.
func (f *hookTable) edit(t *testing.T, pk, sk string, set map[string]*string) {
	t.Helper()
	it := f.get(t, pk, sk)
	for name, v := range set {
		if v == nil {
			delete(it, name)
		} else {
			it[name] = &types.AttributeValueMemberS{Value: *v}
		}
	}
	f.put(t, it)
}

// hookedRun appends a started run with one hook holding token.
func hookedRun(t *testing.T, w world.World, token string) (run, hook string) {
	t.Helper()
	run, hook = ids.New(world.PrefixRun), ids.New(world.PrefixHook)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: token}})
	return run, hook
}

func wantEvents(t *testing.T, w world.World, run string, n int) {
	t.Helper()
	evs, err := runrules.AllEvents(context.Background(), w, run)
	if err != nil || len(evs) != n {
		t.Fatalf("run %s: %d events (%v), want %d: nothing recorded", run, len(evs), err, n)
	}
}

// TestTokenAndHookItemEditedTogether: the trial edited token A's index item
// (t#<sha256(A)>) to name run B's hook and B's hook item to hold token A,
// and ResumeHook(A) recorded the payload in run B (finding 5): the check of
// hook_received against the hook item passed, since both said A. Each item
// holding a token now binds the hook's run, ID and token to its key
// (itemsum.HookSum), checked by every read: GetHookByToken, ResumeHook,
// a webhook delivery and a direct hook_received are world.ErrCorrupt on a
// fresh reader, and nothing is recorded in either run. Also refused: an
// index item copied whole from another token's, and the edit with the
// checksums removed (the run's head says its hook items carry them).
func TestTokenAndHookItemEditedTogether(t *testing.T) {
	f := newHookTable(t)
	ctx := context.Background()
	w := f.open(t)
	s := func(v string) *string { return &v }
	cases := []struct {
		name string
		// edit edits the items of token A (run A) and of run B's hook.
		edit func(t *testing.T, tokA, runB, hookB, tokB string)
		// byToken: GetHookByToken(A) itself refuses (the index item is checked).
		byToken bool
	}{
		{"index names B's hook, B's hook holds A (the trial)", func(t *testing.T, tokA, runB, hookB, _ string) {
			f.edit(t, tokenPK(tokA), "tok", map[string]*string{"run": s(runB), "hid": s(hookB)})
			f.edit(t, "r#"+runB, "h#"+hookB, map[string]*string{"tok": s(tokA)})
			f.edit(t, "h#"+hookB, "hook", map[string]*string{"tok": s(tokA)})
		}, true},
		{"index copied whole from B's token, B's hook holds A", func(t *testing.T, tokA, runB, hookB, tokB string) {
			it := f.get(t, tokenPK(tokB), "tok")
			it["pk"] = &types.AttributeValueMemberS{Value: tokenPK(tokA)}
			f.put(t, it)
			f.edit(t, "r#"+runB, "h#"+hookB, map[string]*string{"tok": s(tokA)})
		}, true},
		{"index copied whole from B's token without its checksum", func(t *testing.T, tokA, _, _, tokB string) {
			it := f.get(t, tokenPK(tokB), "tok")
			it["pk"] = &types.AttributeValueMemberS{Value: tokenPK(tokA)}
			delete(it, "kh")
			f.put(t, it)
		}, true},
		{"both edited with their hook checksums removed", func(t *testing.T, tokA, runB, hookB, _ string) {
			f.edit(t, tokenPK(tokA), "tok", map[string]*string{"run": s(runB), "hid": s(hookB), "kh": nil})
			f.edit(t, "r#"+runB, "h#"+hookB, map[string]*string{"tok": s(tokA), "kh": nil})
			f.edit(t, "h#"+hookB, "hook", map[string]*string{"tok": s(tokA), "kh": nil})
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tokA, tokB := "tok-a-"+ids.New(""), "tok-b-"+ids.New("")
			runA, _ := hookedRun(t, w, tokA)
			runB, hookB := hookedRun(t, w, tokB)
			c.edit(t, tokA, runB, hookB, tokB)
			if c.byToken {
				h, err := f.open(t).GetHookByToken(ctx, &world.GetHookByTokenParams{Token: tokA})
				if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), f.cfg.Table) {
					t.Fatalf("GetHookByToken(A): %+v, %v; want world.ErrCorrupt naming the table", h, err)
				}
			}
			if _, err := engine.ResumeHook(ctx, f.open(t), time.Now, tokA, json.RawMessage(`"attacker"`)); !errors.Is(err, world.ErrCorrupt) {
				t.Fatalf("ResumeHook(A): %v, want world.ErrCorrupt", err)
			}
			_, _, err := engine.DeliverHook(ctx, f.open(t), time.Now, tokA, "d1", func() (json.RawMessage, error) {
				return json.RawMessage(`{"delivery":"d1"}`), nil
			})
			var pe *engine.PermanentError
			if !errors.Is(err, world.ErrCorrupt) || errors.As(err, &pe) {
				t.Fatalf("DeliverHook(A): %v, want world.ErrCorrupt, kept (not a PermanentError)", err)
			}
			// What a resume through the index lands on: hook B's item, read
			// by the commit (no cache), which holds the edited token.
			_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: runB, Events: []world.EventInput{
				{CorrelationID: hookB, Data: &world.HookReceived{Token: tokA, Payload: json.RawMessage(`"attacker"`)}},
			}})
			if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), runB) || !strings.Contains(err.Error(), hookB) {
				t.Fatalf("hook_received(A) on B's edited hook: %v, want world.ErrCorrupt naming run B and its hook", err)
			}
			for _, run := range []string{runA, runB} {
				wantEvents(t, f.open(t), run, 3)
			}
		})
	}
}

// TestDeletedActiveHookItem: the trial deleted a live run's hook item
// (r#<run>/h#<hook>) and ResumeHook answered "not found", the run waiting
// for ever with no error anywhere (finding 6). The token's index item and
// the run still say the hook is active: that is damage, world.ErrCorrupt
// naming the table, run and hook, nothing recorded. A finished run's hooks are legitimately gone
// (world.ErrNotFound, as before), even when its end left a stale index
// item, and a new run then takes the token over.
func TestDeletedActiveHookItem(t *testing.T) {
	f := newHookTable(t)
	ctx := context.Background()
	w := f.open(t)
	payload := json.RawMessage(`"p"`)

	tok := "tok-" + ids.New("")
	run, hook := hookedRun(t, w, tok)
	f.del(t, "r#"+run, "h#"+hook)
	for _, cached := range []bool{false, true} {
		rw := f.open(t)
		if cached {
			// A World that read the run since the deletion caches what it read.
			if _, err := rw.GetRun(ctx, &world.GetRunParams{RunID: run}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := engine.ResumeHook(ctx, rw, time.Now, tok, payload)
		if !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("ResumeHook of a deleted active hook (cached %v): %v, want world.ErrCorrupt", cached, err)
		}
		for _, want := range []string{f.cfg.Table, run, hook} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %s", err, want)
			}
		}
	}
	wantEvents(t, f.open(t), run, 3)
	// A webhook delivery reads the hook's events first (findDelivery), a
	// read of the whole log that caches the run folded from it: the log
	// says the hook is active, and the commit planned on it delivers,
	// without reading the hook's item (the run's end deletes what is left).
	_, _, err := engine.DeliverHook(ctx, f.open(t), time.Now, tok, "d1", func() (json.RawMessage, error) {
		return json.RawMessage(`{"delivery":"d1"}`), nil
	})
	if err != nil {
		t.Fatalf("DeliverHook, planned on the run's log: %v", err)
	}
	wantEvents(t, f.open(t), run, 4)

	// A finished run: its hook items are gone with its end.
	tok2 := "tok-" + ids.New("")
	ended, _ := hookedRun(t, w, tok2)
	index := f.get(t, tokenPK(tok2), "tok")
	mustAppend(t, w, ended, world.EventInput{Data: &world.RunCompleted{Output: []byte(`1`)}})
	if _, err := engine.ResumeHook(ctx, f.open(t), time.Now, tok2, payload); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("ResumeHook of a finished run's hook: %v, want world.ErrNotFound", err)
	}
	// Its end's clean-up did not finish: the index item is left, stale.
	f.put(t, index)
	if _, err := engine.ResumeHook(ctx, f.open(t), time.Now, tok2, payload); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("ResumeHook through a finished run's stale index item: %v, want world.ErrNotFound", err)
	}
	// A new run takes the token over, and gets its payloads.
	next, nextHook := hookedRun(t, f.open(t), tok2)
	h, err := engine.ResumeHook(ctx, f.open(t), time.Now, tok2, payload)
	if err != nil || h.RunID != next || h.HookID != nextHook {
		t.Fatalf("ResumeHook after the token was taken over: %+v, %v; want run %s's hook", h, err, next)
	}
	wantEvents(t, f.open(t), next, 4)
}

// TestTokenTakeoverChecksTheIndexItem: a hook_created whose token's index
// item is taken judges the holder the item names (a live one makes the
// hook a hook_conflict; a finished run's is taken over). An index item
// edited to name another run's live hook is world.ErrCorrupt there too:
// the new hook is neither created nor recorded as a conflict with a hook
// that never held its token.
func TestTokenTakeoverChecksTheIndexItem(t *testing.T) {
	f := newHookTable(t)
	ctx := context.Background()
	w := f.open(t)
	s := func(v string) *string { return &v }
	liveRun, liveHook := hookedRun(t, w, "tok-"+ids.New(""))
	tok := "tok-" + ids.New("")
	ended, _ := hookedRun(t, w, tok)
	index := f.get(t, tokenPK(tok), "tok")
	mustAppend(t, w, ended, world.EventInput{Data: &world.RunCompleted{Output: []byte(`1`)}})
	f.put(t, index) // the ended run's clean-up left its index item
	f.edit(t, tokenPK(tok), "tok", map[string]*string{"run": s(liveRun), "hid": s(liveHook)})

	run := ids.New(world.PrefixRun)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
		{CorrelationID: ids.New(world.PrefixHook), Data: &world.HookCreated{Token: tok}},
	}})
	if !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("hook_created on a token whose index item was edited to name a live hook: %v, want world.ErrCorrupt", err)
	}
	wantEvents(t, f.open(t), run, 2)
}
