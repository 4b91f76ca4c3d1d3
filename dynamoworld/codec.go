package dynamoworld

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// Attribute names of the entity items (short: every byte is billed). The
// payload attributes are in claimcheck.go.
const (
	aStatus      = "st"
	aLastSeq     = "ls"
	aCount       = "n"
	aCreated     = "ca"
	aUpdated     = "ua"
	aStarted     = "sa"
	aFinished    = "fa"
	aWorkflow    = "wf"
	aDeployment  = "dep"
	aVersion     = "ver" // on the run head: the code version that started the run
	aIdemKey     = "ik"
	aErrorCode   = "ec"
	aCancel      = "cr"
	aStepName    = "sn"
	aAttempt     = "at"
	aInterrupted = "ai" // a step's interrupted attempts; absent when none
	aRetryAfter  = "ra"
	aLeaseExp    = "lx"
	aLeaseOwner  = "lo"
	aResumeAt    = "ra"
	aRun         = "run"
	aHookID      = "hid"
	aToken       = "tok"
	aWebhook     = "wh"
	aEventID     = "id"
	aEventType   = "ty"
	aCorrelation = "corr"
	aStreams     = "os" // on the run head: 0 no stream yet, 1 the run has streams (see streams.go)
	aRunStatus   = "rs" // on a commit: the run's status after it
	// A held run's hold, on its head (written with the status).
	aHoldCode    = "hc"
	aHoldError   = "he"
	aHoldAttempt = "hn"
	aHoldSince   = "hs"
	aHoldRetry   = "hr"
)

// ---- runs: a small head item written when the status changes, a body
// item written at creation and at the end; LastSeq and UpdatedAt come from
// the newest commit ----

func encodeRunHead(r *world.Run, ttl int64) *encItem {
	e := newEncItem(runHeadKey(r.RunID))
	it := e.it
	setS(it, aStatus, string(r.Status))
	setT(it, aCreated, r.CreatedAt)
	setT(it, aStarted, r.StartedAt)
	setT(it, aFinished, r.CompletedAt)
	setS(it, aWorkflow, r.WorkflowName)
	setS(it, aVersion, r.Version)
	it[attrGSK] = str(gsk(r.CreatedAt, r.RunID))
	shard := shardOf(r.RunID)
	it[attrG1] = str(g1RunKey(shard))
	it[attrG2] = str(g2Key(r.WorkflowName)(shard))
	it[attrG3] = str(g3Key(r.Status)(shard))
	// A run created by this format may have bare steps (bare.go). Every
	// encoding says so, so a head's update never changes it: a run created
	// before keeps its head without it.
	setN(it, attrMayBare, 1)
	encodeHold(it, r.Hold)
	if ttl > 0 {
		setN(it, attrTTL, ttl)
	}
	return e
}

// encodeHold stores a held run's hold on its head: the head is written
// whenever the status changes, as run_held and the run_started that releases
// it do, and a repeated run_held changes the hold's attributes, which the
// head's diff then writes.
func encodeHold(it item, h *world.RunHold) {
	if h == nil {
		return
	}
	setS(it, aHoldCode, h.ErrorCode)
	setN(it, aHoldAttempt, int64(h.Attempt))
	setT(it, aHoldSince, h.Since)
	setT(it, aHoldRetry, h.RetryAt)
	if h.Error != nil {
		b, err := json.Marshal(h.Error)
		if err != nil {
			// Details that are not JSON: keep what identifies the error.
			b, _ = json.Marshal(&world.ErrorData{Type: h.Error.Type, Message: h.Error.Message, Code: h.Error.Code})
		}
		setS(it, aHoldError, string(b))
	}
}

// decodeHold reads the hold encodeHold stored, nil when there is none.
func decodeHold(it item) (*world.RunHold, error) {
	code := getS(it, aHoldCode)
	if code == "" {
		return nil, nil
	}
	h := &world.RunHold{ErrorCode: code, Attempt: int(getN(it, aHoldAttempt)), Since: getT(it, aHoldSince), RetryAt: getT(it, aHoldRetry)}
	if err := verifyValue(it, aHoldError); err != nil {
		return nil, err
	}
	if b := getS(it, aHoldError); b != "" {
		h.Error = &world.ErrorData{}
		if err := json.Unmarshal([]byte(b), h.Error); err != nil {
			return nil, corrupt(it, "hold", err)
		}
	}
	return h, nil
}

func encodeRunBody(r *world.Run, ttl int64) (*encItem, error) {
	e := newEncItem(runBodyKey(r.RunID))
	it := e.it
	setS(it, aDeployment, r.DeploymentID)
	setS(it, aIdemKey, r.IdempotencyKey)
	setS(it, aErrorCode, r.ErrorCode)
	setS(it, aCancel, r.CancelReason)
	e.payload(attrInput, r.Input)
	e.payload(attrContext, r.ExecutionContext)
	e.payload(attrOutput, r.Output)
	if len(r.Attributes) > 0 {
		b, err := json.Marshal(r.Attributes)
		if err != nil {
			return nil, fmt.Errorf("dynamoworld: encode attributes of run %s: %w", r.RunID, err)
		}
		e.payload(attrAttrs, b)
	}
	if err := encodeError(e, r.Error); err != nil {
		return nil, err
	}
	if ttl > 0 {
		setN(it, attrTTL, ttl)
	}
	return e, nil
}

func encodeError(e *encItem, d *world.ErrorData) error {
	if d == nil {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("dynamoworld: encode error of %s: %w", keyOf(e.it), err)
	}
	e.payload(attrError, b)
	return nil
}

func decodeError(it item, fetched map[string][]byte) (*world.ErrorData, error) {
	b, err := payloadOf(it, attrError, fetched)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	var d world.ErrorData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, corrupt(it, "error", err)
	}
	return &d, nil
}

func corrupt(it item, what string, err error) error {
	return fmt.Errorf("dynamoworld: item %s: undecodable %s: %w", keyOf(it), what, err)
}

// decodeRun rebuilds a run from its head and body items and its newest
// commit, which gives LastSeq, UpdatedAt and the status (rs: a Query may
// return a head older than the commit, see doc.go, Table). Its reader
// verified the items (queryRun); each value read is verified again.
func decodeRun(head, body, last item, fetched map[string][]byte) (*world.Run, error) {
	status := getS(last, aRunStatus)
	if !world.RunStatus(status).Valid() {
		// Every commit carries the run's status after it: one without it,
		// or with a status no World writes, was edited behind the World.
		return nil, fmt.Errorf("%w: dynamoworld: run %s: commit %s has no valid run status (attribute %s = %q)",
			world.ErrCorrupt, strings.TrimPrefix(getS(last, attrPK), "r#"), keyOf(last), aRunStatus, status)
	}
	r := &world.Run{
		RunID:        getS(head, attrPK)[2:],
		WorkflowName: getS(head, aWorkflow),
		Version:      getS(head, aVersion),
		Status:       world.RunStatus(status),
		LastSeq:      getN(last, aLastSeq),
		CreatedAt:    getT(head, aCreated),
		UpdatedAt:    getT(last, aCreated),
		StartedAt:    getT(head, aStarted),
		CompletedAt:  getT(head, aFinished),
	}
	decodeRest(last, r)
	var err error
	if r.Status == world.RunStatusHeld {
		if r.Hold, err = decodeHold(head); err != nil {
			return nil, err
		}
	}
	if body == nil {
		return r, nil
	}
	r.DeploymentID = getS(body, aDeployment)
	r.IdempotencyKey = getS(body, aIdemKey)
	r.ErrorCode = getS(body, aErrorCode)
	r.CancelReason = getS(body, aCancel)
	if r.Input, err = payloadOf(body, attrInput, fetched); err != nil {
		return nil, err
	}
	if r.ExecutionContext, err = payloadOf(body, attrContext, fetched); err != nil {
		return nil, err
	}
	if r.Output, err = payloadOf(body, attrOutput, fetched); err != nil {
		return nil, err
	}
	attrs, err := payloadOf(body, attrAttrs, fetched)
	if err != nil {
		return nil, err
	}
	if len(attrs) > 0 {
		if err := json.Unmarshal(attrs, &r.Attributes); err != nil {
			return nil, corrupt(body, "attributes", err)
		}
	}
	if r.Error, err = decodeError(body, fetched); err != nil {
		return nil, err
	}
	return r, nil
}

// ---- steps ----

func encodeStep(s *world.Step, ttl int64) (*encItem, error) {
	e := newEncItem(stepKey(s.RunID, s.StepID))
	it := e.it
	setS(it, aStepName, s.StepName)
	setS(it, aStatus, string(s.Status))
	setN(it, aAttempt, int64(s.Attempt))
	if s.Interrupted > 0 {
		setN(it, aInterrupted, int64(s.Interrupted))
	}
	setT(it, aRetryAfter, s.RetryAfter)
	setT(it, aLeaseExp, s.LeaseExpiresAt)
	setT(it, aCreated, s.CreatedAt)
	setT(it, aUpdated, s.UpdatedAt)
	setT(it, aStarted, s.StartedAt)
	setT(it, aFinished, s.CompletedAt)
	e.payload(attrInput, s.Input)
	e.payload(attrOutput, s.Output)
	if err := encodeError(e, s.Error); err != nil {
		return nil, err
	}
	if err := encodeStepComp(e, s.Compensation); err != nil {
		return nil, err
	}
	if ttl > 0 {
		setN(it, attrTTL, ttl)
	}
	return e, nil
}

func decodeStep(it item, fetched map[string][]byte) (*world.Step, error) {
	s := &world.Step{
		RunID:          getS(it, attrPK)[2:],
		StepID:         getS(it, attrSK)[len(prefStep):],
		StepName:       getS(it, aStepName),
		Status:         world.StepStatus(getS(it, aStatus)),
		Attempt:        int(getN(it, aAttempt)),
		Interrupted:    int(getN(it, aInterrupted)),
		RetryAfter:     getT(it, aRetryAfter),
		LeaseExpiresAt: getT(it, aLeaseExp),
		CreatedAt:      getT(it, aCreated),
		UpdatedAt:      getT(it, aUpdated),
		StartedAt:      getT(it, aStarted),
		CompletedAt:    getT(it, aFinished),
	}
	var err error
	if s.Input, err = payloadOf(it, attrInput, fetched); err != nil {
		return nil, err
	}
	if s.Output, err = payloadOf(it, attrOutput, fetched); err != nil {
		return nil, err
	}
	if s.Error, err = decodeError(it, fetched); err != nil {
		return nil, err
	}
	if s.Compensation, err = decodeStepComp(it, fetched); err != nil {
		return nil, err
	}
	return s, nil
}

// ---- waits ----

func encodeWait(w *world.Wait, ttl int64) *encItem {
	e := newEncItem(waitKey(w.RunID, w.WaitID))
	it := e.it
	setS(it, aStatus, string(w.Status))
	setT(it, aResumeAt, w.ResumeAt)
	setT(it, aCreated, w.CreatedAt)
	setT(it, aFinished, w.CompletedAt)
	if ttl > 0 {
		setN(it, attrTTL, ttl)
	}
	return e
}

func decodeWait(it item) *world.Wait {
	return &world.Wait{
		RunID:       getS(it, attrPK)[2:],
		WaitID:      getS(it, attrSK)[len(prefWait):],
		Status:      world.WaitStatus(getS(it, aStatus)),
		ResumeAt:    getT(it, aResumeAt),
		CreatedAt:   getT(it, aCreated),
		CompletedAt: getT(it, aFinished),
	}
}

// ---- hooks: the global item (by hook ID), the run's link (by run) and the
// token item (by token) ----

func encodeHook(k itemKey, h *world.Hook, global bool) *encItem {
	e := newEncItem(k)
	it := e.it
	setS(it, aRun, h.RunID)
	setS(it, aHookID, h.HookID)
	setS(it, aToken, h.Token)
	setT(it, aCreated, h.CreatedAt)
	if h.IsWebhook {
		it[aWebhook] = boolean(true)
	}
	e.payload(attrMeta, h.Metadata)
	if global {
		it[attrG1] = str(g1HookKey(shardOf(h.HookID)))
		it[attrGSK] = str(gsk(h.CreatedAt, h.HookID))
	}
	return e
}

// encodeToken is the token's item: a copy of the hook, so that
// GetHookByToken is one read.
func encodeToken(h *world.Hook) *encItem { return encodeHook(tokenKey(h.Token), h, false) }

func decodeHook(it item, fetched map[string][]byte) (*world.Hook, error) {
	h := &world.Hook{
		RunID:     getS(it, aRun),
		HookID:    getS(it, aHookID),
		Token:     getS(it, aToken),
		IsWebhook: getBool(it, aWebhook),
		CreatedAt: getT(it, aCreated),
	}
	var err error
	if h.Metadata, err = payloadOf(it, attrMeta, fetched); err != nil {
		return nil, err
	}
	return h, nil
}

// ---- commits: the events of one Append in one item ----

// storedEvent is an event as a commit item holds it; its run and sequence
// number come from the item.
type storedEvent struct {
	ID   string          `json:"i"`
	Type world.EventType `json:"t"`
	Corr string          `json:"c,omitempty"`
	At   int64           `json:"a"`
	Data json.RawMessage `json:"d,omitempty"`
	// Ref is the S3 key of Data when it is over the claim-check threshold.
	Ref string `json:"r,omitempty"`
}

// encodeCommit stores a commit's events (run, dense from prev+1) in one
// item keyed by prev: attribute_not_exists on that key is the fence. An
// event's data over the claim-check threshold is referenced (cc.key) and
// returned in uploads, so that it is stored once however often the commit
// is retried.
func encodeCommit(cc *claimCheck, runID string, prev int64, evs []world.Event, lazy map[string]int64, ttl int64) (*encItem, map[string][]byte, error) {
	e := newEncItem(commitKey(runID, prev))
	out := make([]storedEvent, len(evs))
	uploads := map[string][]byte{}
	for i, ev := range evs {
		d, err := json.Marshal(ev.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("dynamoworld: encode %s event of run %s: %w", ev.Type(), runID, err)
		}
		out[i] = storedEvent{ID: ev.EventID, Type: ev.Type(), Corr: ev.CorrelationID, At: ev.CreatedAt.UnixNano(), Data: d}
		if cc != nil && len(d) > cc.threshold {
			k := cc.key(runID, d)
			uploads[k] = d
			out[i].Data, out[i].Ref = nil, k
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamoworld: encode a commit of run %s: %w", runID, err)
	}
	setN(e.it, aCount, int64(len(evs)))
	setN(e.it, aLastSeq, prev+int64(len(evs)))
	setT(e.it, aCreated, evs[len(evs)-1].CreatedAt)
	e.payload(attrData, b)
	setLazy(e.it, lazy)
	if ttl > 0 {
		setN(e.it, attrTTL, ttl)
	}
	return e, uploads, nil
}

// commitEvents reads a commit item's stored events (the item's payload
// resolved with fetched), its checksum verified (payloadOf).
func commitEvents(it item, fetched map[string][]byte) ([]storedEvent, error) {
	b, err := payloadOf(it, attrData, fetched)
	if err != nil {
		return nil, err
	}
	var stored []storedEvent
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, corrupt(it, "events", err)
	}
	return stored, nil
}

// decodeCommit returns a commit item's events in order; fetched must hold
// the item's payload and its events' referenced data (fetchCommits).
func decodeCommit(it item, fetched map[string][]byte) ([]world.Event, error) {
	prev, ok := prevFromSK(getS(it, attrSK))
	if !ok {
		return nil, corrupt(it, "commit key", fmt.Errorf("sort key %q", getS(it, attrSK)))
	}
	stored, err := commitEvents(it, fetched)
	if err != nil {
		return nil, err
	}
	runID := getS(it, attrPK)[2:]
	evs := make([]world.Event, len(stored))
	for i, se := range stored {
		data, err := world.NewEventData(se.Type)
		if err != nil {
			return nil, corrupt(it, "event type", err)
		}
		if se.Ref != "" {
			d, ok := fetched[se.Ref]
			if !ok {
				return nil, fmt.Errorf("dynamoworld: claim-checked event data %s was not fetched", se.Ref)
			}
			se.Data = d
		}
		if len(se.Data) > 0 {
			if err := json.Unmarshal(se.Data, data); err != nil {
				return nil, corrupt(it, "event data", err)
			}
		}
		evs[i] = world.Event{
			RunID: runID, EventID: se.ID, Seq: prev + int64(i) + 1, CorrelationID: se.Corr,
			CreatedAt: time.Unix(0, se.At).UTC(), Data: data,
		}
	}
	return evs, nil
}

// ---- diffs ----

// diffUpdate turns the change from old to new (two full encodings of one
// item) into an update: SET what differs or is new, REMOVE what is gone.
func diffUpdate(oldIt, newIt item) *updateBuilder {
	u := &updateBuilder{e: newExpr()}
	for _, k := range sortedKeys(newIt) {
		if k == attrPK || k == attrSK {
			continue
		}
		if ov, ok := oldIt[k]; !ok || !avEqual(ov, newIt[k]) {
			u.set(k, newIt[k])
		}
	}
	for _, k := range sortedKeys(oldIt) {
		if _, ok := newIt[k]; !ok {
			u.del(k)
		}
	}
	return u
}

func sortedKeys(it item) []string {
	keys := make([]string, 0, len(it))
	for k := range maps.Keys(it) {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
