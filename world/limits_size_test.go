package world

import (
	"encoding/json"
	"testing"
	"time"
)

// storedLenCases are payloads whose stored form differs from them in
// every way encoding/json's differs: whitespace, HTML characters, U+2028
// and U+2029, escapes inside strings.
var storedLenCases = []string{
	``, `1`, `null`, `"x"`, ` { "a" : [ 1 , 2 ] } `, "\n\t{\r\n\"a\":\"b c\"}\n",
	`{"m": "<&>"}`, `"a\"<b"`, `"\\"`, `"\\\" <"`, "\"\u2028\u2029\"", `"é ü 日本"`,
	`[ "  spaced  " , { "k" : "\u003c" } ]`, `"\u2028"`, "\"\xe2\x80\"", `{"a":true, "b":false, "c":null}`,
}

// storedLen measures a payload as json.Marshal stores it, whether given
// as written or as stored (what a read returns).
func TestStoredLen(t *testing.T) {
	for _, c := range storedLenCases {
		checkStoredLen(t, []byte(c))
	}
}

func FuzzStoredLen(f *testing.F) {
	for _, c := range storedLenCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if !json.Valid(p) {
			return
		}
		checkStoredLen(t, p)
	})
}

func checkStoredLen(t *testing.T, p []byte) {
	t.Helper()
	if len(p) == 0 {
		if n := storedLen(p); n != 0 {
			t.Fatalf("storedLen(empty) = %d, want 0", n)
		}
		return
	}
	stored, err := json.Marshal(json.RawMessage(p))
	if err != nil {
		t.Fatal(err)
	}
	if n := storedLen(p); n != len(stored) {
		t.Fatalf("storedLen(%q) = %d, want %d (stored %q)", p, n, len(stored), stored)
	}
	if n := storedLen(stored); n != len(stored) {
		t.Fatalf("storedLen(%q) (stored) = %d, want %d", stored, n, len(stored))
	}
}

// textLen measures a string as a JSON round trip returns it.
func TestTextLen(t *testing.T) {
	for _, s := range []string{"", "plain", "é日本", "bad \xff byte", "\xe2\x80", "\xc3", "ok\xf0\x9f\x98\x80\xf0"} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if n := textLen(s); n != len(back) || textLen(back) != len(back) {
			t.Fatalf("textLen(%q) = %d, textLen(read back) = %d, want %d", s, n, textLen(back), len(back))
		}
	}
}

// Run.PayloadBytes is a function of the committed events: the log as
// appended (payloads spaced, with HTML characters, errors with bytes that
// are not UTF-8) and as a read returns it (each event through its JSON
// form, as every World stores it) fold to the same count, each payload
// counted as stored.
func TestRunBytesOfCommittedEvents(t *testing.T) {
	const run = "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	ids := NewIDSource(nil, nil)
	step, hook := ids.New(PrefixStep), ids.New(PrefixHook)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	data := []struct {
		corr string
		d    EventData
	}{
		{"", &RunCreated{WorkflowName: "wf", Input: json.RawMessage(`{ "a" : 1 }`), ExecutionContext: json.RawMessage(`{"x": "<y>"}`)}},
		{"", &RunStarted{}},
		{step, &StepCreated{StepName: "s", Input: json.RawMessage("[ 1,\n 2 ]")}},
		{step, &StepStarted{LeaseTTL: time.Minute}},
		{step, &StepRetrying{Error: &ErrorData{Message: "bad \xff byte", Details: json.RawMessage(`{ "d": "&" }`)}, RetryAfter: at}},
		{step, &StepStarted{LeaseTTL: time.Minute}},
		{step, &StepCompleted{Result: json.RawMessage("\"\u2028 <&> \u2029\"")}},
		{hook, &HookCreated{Token: "t", Metadata: json.RawMessage(`{"m": "<&>"}`)}},
		{hook, &HookReceived{Payload: json.RawMessage(` "p" `)}},
		{"", &RunCompleted{Output: json.RawMessage(`{ "out" : true }`)}},
	}
	var appended, read []Event
	want := int64(0)
	for i, e := range data {
		ev := Event{RunID: run, EventID: ids.New(PrefixEvent), Seq: int64(i + 1), CorrelationID: e.corr, CreatedAt: at, Data: e.d}
		appended = append(appended, ev)
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		read = append(read, back)
		want += measurePayloads(back.Data).total
	}
	for name, evs := range map[string][]Event{"as appended": appended, "as read": read} {
		st, err := FoldEvents(evs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Run.PayloadBytes != want {
			t.Errorf("%s: the run counts %d payload bytes, want %d (each payload as stored)", name, st.Run.PayloadBytes, want)
		}
	}
	// What is stored: the compact JSON of each payload, the text of each
	// error (its bad byte as U+FFFD).
	stored := int64(len(`{"a":1}`) + len(`{"x":"\u003cy\u003e"}`) + len(`[1,2]`) + len("bad \uFFFD byte") + len(`{"d":"\u0026"}`) +
		len(`"\u2028 \u003c\u0026\u003e \u2029"`) + len(`{"m":"\u003c\u0026\u003e"}`) + len(`"p"`) + len(`{"out":true}`))
	if want != stored {
		t.Fatalf("the events read back measure %d bytes, want %d", want, stored)
	}
}

// A hook_created recorded as hook_conflict (its token held by another
// run) counts what is recorded: no metadata.
func TestRunBytesHookConflict(t *testing.T) {
	const run = "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	ids := NewIDSource(nil, nil)
	r := &Run{RunID: run, WorkflowName: "wf", Status: RunStatusRunning, LastSeq: 2, PayloadBytes: 10}
	holder := &Hook{RunID: "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAW", HookID: ids.New(PrefixHook), Token: "t"}
	ev := Event{RunID: run, EventID: ids.New(PrefixEvent), CorrelationID: ids.New(PrefixHook), Data: &HookCreated{Token: "t", Metadata: json.RawMessage(`{"m":1}`)}}
	eff, err := Apply(State{Run: r, TokenHolder: holder}, ev, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eff.Event.Data.(*HookConflict); !ok || eff.Run.PayloadBytes != 10 {
		t.Fatalf("recorded %T, the run at %d payload bytes; want hook_conflict and 10", eff.Event.Data, eff.Run.PayloadBytes)
	}
}
