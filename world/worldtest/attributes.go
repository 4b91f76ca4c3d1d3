package worldtest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// Run attributes: attribute_set merges keys into a run's attributes in any
// run status, within the bounds world.CheckAttributes and MaxAttributes
// set; a refused attribute_set leaves the run as it was; ListRuns filters
// by one attribute, alone or with the workflow and status filters.
func attributeCases() []testCase {
	return []testCase{
		{"set_merge_overwrite", testAttrSetMerge},
		{"set_by_workflow_code", testAttrSetCorrelated},
		{"set_after_end", testAttrSetAfterEnd},
		{"set_missing_run_not_found", testAttrSetMissingRun},
		{"invalid_refused_run_unchanged", testAttrInvalid},
		{"limit_refused_run_unchanged", testAttrLimit},
		{"list_by_attribute", testAttrList},
		{"list_by_attribute_invalid_filter", testAttrListInvalid},
	}
}

func attrSet(kv ...string) *world.AttributeSet {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &world.AttributeSet{Attributes: m}
}

// createRunWith creates a run of workflow wf with attributes.
func (f *fixture) createRunWith(wf string, attrs map[string]string) string {
	f.t.Helper()
	id := ids.New(world.PrefixRun)
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: wf, Attributes: attrs}))
	return id
}

func (f *fixture) wantAttrs(runID string, want map[string]string, what string) *world.Run {
	f.t.Helper()
	r := f.getRun(runID)
	if !maps.Equal(r.Attributes, want) {
		f.t.Fatalf("%s: GetRun attributes %v, want %v", what, r.Attributes, want)
	}
	return r
}

func testAttrSetMerge(t *testing.T, f *fixture) {
	id := f.createRunWith(testWorkflow, map[string]string{"a": "1", "b": "2"})
	res := f.mustAppend(id, ev("", attrSet("b", "3", "c", "4")))
	e := res.Results[0].Event
	if e == nil || e.Type() != world.EventAttributeSet || e.Seq != 2 {
		t.Fatalf("attribute_set: event %+v, want attribute_set with Seq 2", e)
	}
	want := map[string]string{"a": "1", "b": "3", "c": "4"}
	if !maps.Equal(res.Run.Attributes, want) {
		t.Fatalf("attribute_set: result run attributes %v, want %v", res.Run.Attributes, want)
	}
	f.wantAttrs(id, want, "after a merge")
	f.mustAppend(id, ev("", attrSet("a", "x")))
	r := f.wantAttrs(id, map[string]string{"a": "x", "b": "3", "c": "4"}, "after an overwrite")
	if r.Status != world.RunStatusPending || r.LastSeq != 3 {
		t.Fatalf("attribute_set changed the run's status to %s, LastSeq %d (want pending, 3)", r.Status, r.LastSeq)
	}
	evs := f.events(id)
	d, ok := evs[1].Data.(*world.AttributeSet)
	if len(evs) != 3 || !ok || !maps.Equal(d.Attributes, map[string]string{"b": "3", "c": "4"}) || evs[1].CorrelationID != "" {
		t.Fatalf("ListEvents: %d events, the second %+v; want the attribute_set as proposed", len(evs), evs[1])
	}
}

func testAttrSetCorrelated(t *testing.T, f *fixture) {
	id := f.startedRun()
	corr := ids.New(world.PrefixAttribute)
	in := &world.AttributeSet{Attributes: map[string]string{"stage": "one"}, Patches: []string{"p-attr"}}
	f.mustAppend(id, ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s"}), ev(corr, in))
	f.wantAttrs(id, map[string]string{"stage": "one"}, "attribute_set from workflow code")
	evs := f.events(id)
	last := evs[len(evs)-1]
	if d, ok := last.Data.(*world.AttributeSet); !ok || last.CorrelationID != corr || !slices.Equal(d.Patches, []string{"p-attr"}) {
		t.Fatalf("ListEvents: last event %+v, want the attribute_set with correlation ID %s and its patch", last, corr)
	}
	byCorr, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: id, CorrelationID: corr})
	if err != nil || len(byCorr.Items) != 1 || byCorr.Items[0].Type() != world.EventAttributeSet {
		t.Fatalf("ListEventsByCorrelation(%s): %+v, %v; want the attribute_set", corr, byCorr, err)
	}
}

func testAttrSetAfterEnd(t *testing.T, f *fixture) {
	for _, how := range []world.EventType{world.EventRunCompleted, world.EventRunFailed, world.EventRunCancelled} {
		id := f.startedRun()
		f.endRun(id, how)
		f.mustAppend(id, ev("", attrSet("reviewed", "yes")))
		r := f.wantAttrs(id, map[string]string{"reviewed": "yes"}, "attribute_set after "+string(how))
		if !r.Status.Terminal() {
			t.Fatalf("attribute_set after %s: status %s", how, r.Status)
		}
	}
}

func testAttrSetMissingRun(t *testing.T, f *fixture) {
	_, err := f.append(ids.New(world.PrefixRun), ev("", attrSet("a", "1")))
	wantErr(t, err, world.ErrNotFound, "attribute_set on a missing run")
}

// wantUnchanged checks that a refused commit left the run as it was.
func (f *fixture) wantUnchanged(runID string, before *world.Run, what string) {
	f.t.Helper()
	after := f.getRun(runID)
	if after.LastSeq != before.LastSeq || !maps.Equal(after.Attributes, before.Attributes) || after.Status != before.Status {
		f.t.Fatalf("%s: run changed from LastSeq %d attributes %v to LastSeq %d attributes %v", what, before.LastSeq, before.Attributes, after.LastSeq, after.Attributes)
	}
	if n := len(f.events(runID)); int64(n) != before.LastSeq {
		f.t.Fatalf("%s: the log has %d events, the run %d", what, n, before.LastSeq)
	}
}

func testAttrInvalid(t *testing.T, f *fixture) {
	id := f.createRunWith(testWorkflow, map[string]string{"a": "1"})
	before := f.getRun(id)
	cases := []struct {
		name string
		in   world.EventInput
		want string // what the refusal names
	}{
		{"key with a space", ev("", attrSet("bad key", "1")), `"bad key"`},
		{"key with a slash", ev("", attrSet("a/b", "1")), `"a/b"`},
		{"key too long", ev("", attrSet(strings.Repeat("k", world.MaxAttributeKeyLength+1), "1")), "longer"},
		{"empty value", ev("", attrSet("a", "")), `"a"`},
		{"value too long", ev("", attrSet("a", strings.Repeat("v", world.MaxAttributeValueLength+1))), `"a"`},
		{"value with a control character", ev("", attrSet("a", "x\x07")), `"a"`},
		{"no attributes", ev("", &world.AttributeSet{}), "required"},
		{"a step's correlation ID", ev(ids.New(world.PrefixStep), attrSet("a", "2")), ""},
	}
	for _, tc := range cases {
		_, err := f.append(id, tc.in)
		wantErr(t, err, world.ErrInvalid, "attribute_set with %s", tc.name)
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("attribute_set with %s: error %q does not name %s", tc.name, err, tc.want)
		}
		f.wantUnchanged(id, before, "refused attribute_set with "+tc.name)
	}
	// In a commit: nothing of it lands.
	_, err := f.append(id, ev("", attrSet("ok", "1")), ev("", attrSet("bad key", "1")))
	ce := wantAs[*world.RefusalError](t, err, "a commit whose second attribute_set is invalid")
	if ce.Index != 1 || !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("RefusalError.Index %d (%v), want index 1 and ErrInvalid", ce.Index, err)
	}
	f.wantUnchanged(id, before, "a refused commit of two attribute_sets")
	// run_created follows the same rules.
	_, err = f.append(ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: testWorkflow, Attributes: map[string]string{"a=b": "1"}}))
	wantErr(t, err, world.ErrInvalid, "run_created with an invalid attribute key")
}

func testAttrLimit(t *testing.T, f *fixture) {
	full := map[string]string{}
	for i := range world.MaxAttributes - 1 {
		full[fmt.Sprintf("k%02d", i)] = "v"
	}
	id := f.createRunWith(testWorkflow, full)
	f.mustAppend(id, ev("", attrSet("last", "v"))) // the run now holds MaxAttributes
	full["last"] = "v"
	before := f.wantAttrs(id, full, "at the bound")
	_, err := f.append(id, ev("", attrSet("k00", "new", "one-too-many", "v")))
	re := wantAs[*world.RefusalError](t, err, "attribute %d of a run", world.MaxAttributes+1)
	if !errors.Is(err, world.ErrInvalid) || !strings.Contains(re.Reason, `"one-too-many"`) {
		t.Fatalf("the refusal %v is not ErrInvalid naming the key one-too-many", err)
	}
	f.wantUnchanged(id, before, "attribute_set past the bound")
	f.mustAppend(id, ev("", attrSet("k00", "new"))) // overwriting still works
	full["k00"] = "new"
	f.wantAttrs(id, full, "an overwrite on a full run")
	tooMany := maps.Clone(full)
	tooMany["x"] = "v"
	_, err = f.append(ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: testWorkflow, Attributes: tooMany}))
	wantErr(t, err, world.ErrInvalid, "run_created with %d attributes", len(tooMany))
}

func testAttrList(t *testing.T, f *fixture) {
	const wfA, wfB = "worldtest-attr-a", "worldtest-attr-b"
	type spec struct {
		wf      string
		status  world.RunStatus
		created map[string]string // at run_created
		set     map[string]string // by attribute_set, afterwards
	}
	specs := []spec{
		{wfA, world.RunStatusPending, map[string]string{"tenant": "t1"}, nil},
		{wfB, world.RunStatusRunning, nil, map[string]string{"tenant": "t1"}},
		{wfA, world.RunStatusRunning, map[string]string{"tenant": "t2"}, nil},
		{wfA, world.RunStatusCompleted, map[string]string{"tenant": "t2"}, map[string]string{"tenant": "t1"}}, // moved from t2 to t1
		{wfB, world.RunStatusFailed, map[string]string{"tenant": "t1", "tier": "gold"}, nil},
		{wfA, world.RunStatusRunning, nil, nil},
		{wfA, world.RunStatusRunning, map[string]string{"tenant": "t1"}, map[string]string{"tier": "gold"}},
		{wfB, world.RunStatusCompleted, map[string]string{"other": "t1"}, nil}, // the value under another key
	}
	created := make([]string, len(specs))
	final := make([]map[string]string, len(specs))
	for i, s := range specs {
		id := f.createRunWith(s.wf, s.created)
		if s.status != world.RunStatusPending {
			f.mustAppend(id, ev("", &world.RunStarted{}))
		}
		if s.status.Terminal() {
			f.endRun(id, map[world.RunStatus]world.EventType{world.RunStatusCompleted: world.EventRunCompleted, world.RunStatusFailed: world.EventRunFailed}[s.status])
		}
		if s.set != nil { // after the end, for the ended ones
			f.mustAppend(id, ev("", &world.AttributeSet{Attributes: s.set}))
		}
		created[i] = id
		final[i] = maps.Clone(s.created)
		if final[i] == nil {
			final[i] = map[string]string{}
		}
		maps.Copy(final[i], s.set)
	}
	want := func(wf string, st world.RunStatus, key, value string) []string {
		var out []string
		for i := len(specs) - 1; i >= 0; i-- {
			if (wf == "" || specs[i].wf == wf) && (st == "" || specs[i].status == st) && final[i][key] == value {
				out = append(out, created[i])
			}
		}
		return out
	}
	for _, tc := range []struct {
		wf         string
		st         world.RunStatus
		key, value string
	}{
		{"", "", "tenant", "t1"}, {"", "", "tenant", "t2"}, {"", "", "tier", "gold"}, {"", "", "tenant", "t3"},
		{wfA, "", "tenant", "t1"}, {wfB, "", "tenant", "t1"}, {"", world.RunStatusRunning, "tenant", "t1"},
		{"", world.RunStatusCompleted, "tenant", "t1"}, {wfA, world.RunStatusRunning, "tier", "gold"}, {wfB, world.RunStatusRunning, "tier", "gold"},
	} {
		for _, limit := range []int{1, 2, 100} {
			what := fmt.Sprintf("ListRuns(workflow %q, status %q, %s=%s, limit %d)", tc.wf, tc.st, tc.key, tc.value, limit)
			got, _ := readAll(t, what, limit, func(p world.Pagination) (*world.Page[world.Run], error) {
				return f.w.ListRuns(f.ctx, &world.ListRunsParams{WorkflowName: tc.wf, Status: tc.st,
					Attribute: &world.AttributeFilter{Key: tc.key, Value: tc.value}, Pagination: p})
			})
			var gotIDs []string
			for _, r := range got {
				gotIDs = append(gotIDs, r.RunID)
				if r.Attributes[tc.key] != tc.value {
					t.Fatalf("%s returned run %s with attributes %v", what, r.RunID, r.Attributes)
				}
			}
			if w := want(tc.wf, tc.st, tc.key, tc.value); !reflect.DeepEqual(gotIDs, w) {
				t.Fatalf("%s: got %v, want newest first %v", what, gotIDs, w)
			}
		}
	}
}

func testAttrListInvalid(t *testing.T, f *fixture) {
	f.createRunWith(testWorkflow, map[string]string{"a": "1"})
	for _, flt := range []world.AttributeFilter{{Key: "", Value: "1"}, {Key: "a b", Value: "1"}, {Key: "a", Value: ""}} {
		_, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{Attribute: &flt})
		wantErr(t, err, world.ErrInvalid, "ListRuns by attribute %q=%q", flt.Key, flt.Value)
	}
}
