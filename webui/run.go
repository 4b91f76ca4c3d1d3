package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

func fmtDuration(d time.Duration) string { return timeline.FormatDuration(d) }

// runView is what the run page shows.
type runView struct {
	Run    *world.Run
	Took   string
	Parent string
	Input  string
	Output string
	Error  []errorLine
	// Compensations is the run's compensation counts in words ("" when
	// none); CompFailed is set when one failed for good.
	Compensations string
	CompFailed    bool
	// Compensating is set for a run that has ended with compensations
	// still to run (the live feed follows them until the run is at rest).
	Compensating bool
	Timeline     *chart
	Steps        []stepView
	Hooks        []hookView
	Waits        []waitView
	Streams      []streamView
	Events       []eventView
	// Live is the URL of the run's live feed from the page's last event on
	// (the live subscription, as Server-Sent Events); "" once the run is at
	// rest (deactivated).
	Live string
	// Actions the run's status allows (all false on a read-only dashboard).
	CanCancel, CanRerun, CanRetry bool
}

// errorLine is one error of a chain (an error and its causes).
type errorLine struct{ Type, Code, Message, Stack string }

type stepView struct {
	ID, Name, Status string
	Attempt          int
	Input, Output    string
	Attempts         []attemptView
	Error            []errorLine
	// Comp is the step's compensation, nil when it declared none.
	Comp *compView
}

type attemptView struct {
	N       int
	Started time.Time
	Took    string
	Outcome string
	Error   string
}

type hookView struct {
	ID, Token, Status string
	Webhook           bool
	Child             bool // the engine's own hook for a child run's outcome
	Active            bool
	Created           time.Time
	Metadata          string
	Payloads          []string
}

type waitView struct {
	ID, Status        string
	Created, ResumeAt time.Time
}

type streamView struct {
	Name    string // "" is the default stream
	Label   string
	Text    string
	Next    int64 // the index of the next chunk
	Done    bool
	Partial bool   // the page shows only the stream's last chunks
	Src     string // the live feed's URL (Server-Sent Events)
}

type eventView struct {
	Seq         int64
	Type        string
	Correlation string
	At          time.Time
	Data        string
}

// loadRun reads the run the path names, answering 404 for an unknown one.
func (s *server) loadRun(w http.ResponseWriter, r *http.Request) (*world.Run, bool) {
	id := r.PathValue("id")
	if world.ValidateID(world.PrefixRun, id) != nil {
		s.fail404(w, r, "That is not a run ID.")
		return nil, false
	}
	run, err := s.world.GetRun(r.Context(), &world.GetRunParams{RunID: id})
	if errors.Is(err, world.ErrNotFound) {
		s.fail404(w, r, "Run "+id+" is not in this store.")
		return nil, false
	}
	if err != nil {
		s.log.Error("webui: get run", "run", id, "err", err)
		s.failPage(w, r, http.StatusInternalServerError, "Could not read the run: "+err.Error())
		return nil, false
	}
	return run, true
}

// run serves a run's page.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	run, ok := s.loadRun(w, r)
	if !ok {
		return
	}
	v, err := s.runView(r.Context(), run)
	if err != nil {
		s.log.Error("webui: run page", "run", run.RunID, "err", err)
		s.failPage(w, r, http.StatusInternalServerError, "Could not read the run: "+err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "run", run.WorkflowName+" "+run.RunID, v)
}

func (s *server) runView(ctx context.Context, run *world.Run) (*runView, error) {
	events, err := allEvents(ctx, s.world, run.RunID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	v := &runView{Run: run, Took: took(run, now), Input: s.pretty(run.Input), Output: s.pretty(run.Output),
		Error: errorChain(run.Error), Timeline: newChart(run, events, now),
		Compensations: compCounts(run), CompFailed: run.Compensations.Failed > 0,
		Compensating: run.Status.Terminal() && !run.Deactivated() && compMark(run) == "compensating"}
	if info, err := s.cfg.Client.GetRun(ctx, run.RunID); err == nil {
		v.Parent = info.ParentRunID
	}
	if v.Steps, err = s.steps(ctx, run, events); err != nil {
		return nil, err
	}
	v.Hooks, v.Waits = hooksAndWaits(events, s.pretty)
	if v.Streams, err = s.streams(ctx, run.RunID); err != nil {
		return nil, err
	}
	v.Events = eventViews(events, s.pretty)
	if !run.Deactivated() { // the feed goes on through the run's rest
		var last int64
		if len(events) > 0 {
			last = events[len(events)-1].Seq
		}
		v.Live = "/events?" + url.Values{"run": {run.RunID}, "after": {world.RunCursor(run.RunID, last)}}.Encode()
	}
	if !s.readOnly() {
		v.CanCancel = !run.Status.Terminal()
		v.CanRerun = run.Status.Terminal()
		v.CanRetry = run.Status == world.RunStatusHeld
	}
	return v, nil
}

// allEvents reads a run's whole log.
func allEvents(ctx context.Context, w world.Storage, runID string) ([]world.Event, error) {
	return runrules.AllEvents(ctx, w, runID)
}

// pretty is the package's pretty, except that a payload the dashboard's
// World left sealed says why its keys did not open it (no key with its ID,
// or a key with that ID that does not open it) when the World can say.
func (s *server) pretty(raw []byte) string {
	if kid, ok := sealmark.KeyID(raw); ok {
		return s.sealedNote(kid)
	}
	return pretty(raw)
}

// pretty indents JSON, and shows <, > and & as themselves where Go's
// encoder wrote them as \u003c, \u003e and \u0026 (the page escapes them
// for HTML); text that is not JSON comes back as it is.
func pretty(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if kid, ok := sealmark.KeyID(raw); ok {
		// No key opened it (skein ui -keys, -kms-key): say which it needs.
		return sealmark.Note(kid, sealmark.NoKey)
	}
	if len(raw) > maxShownPayload {
		return fmt.Sprintf("%s… (%d bytes in all; skein runs events shows it whole)", clipText(string(raw), maxShownPayload), len(raw))
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return unescapeHTMLEscapes(b.Bytes())
}

// unescapeHTMLEscapes undoes encoding/json's HTML escaping in valid JSON.
func unescapeHTMLEscapes(js []byte) string {
	out := make([]byte, 0, len(js))
	inString := false
	for i := 0; i < len(js); i++ {
		c := js[i]
		switch {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(js):
			if js[i+1] == 'u' && i+5 < len(js) {
				switch string(js[i+2 : i+6]) {
				case "003c", "003C":
					out, i = append(out, '<'), i+5
					continue
				case "003e", "003E":
					out, i = append(out, '>'), i+5
					continue
				case "0026":
					out, i = append(out, '&'), i+5
					continue
				}
			}
			out = append(out, c, js[i+1]) // an escape pair, kept
			i++
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

func errorChain(e *world.ErrorData) []errorLine {
	var out []errorLine
	for ; e != nil && len(out) < 10; e = e.Cause {
		out = append(out, errorLine{Type: e.Type, Code: e.Code, Message: e.Message, Stack: e.Stack})
	}
	return out
}

// steps lists the run's steps with their attempts, read from the log.
func (s *server) steps(ctx context.Context, run *world.Run, events []world.Event) ([]stepView, error) {
	attempts := map[string][]attemptView{}
	for _, ev := range events {
		list := attempts[ev.CorrelationID]
		last := len(list) - 1
		end := func(outcome, msg string) {
			if last >= 0 && list[last].Outcome == "running" {
				list[last].Outcome, list[last].Error = outcome, msg
				list[last].Took = fmtDuration(ev.CreatedAt.Sub(list[last].Started))
			}
		}
		switch d := ev.Data.(type) {
		case *world.StepStarted:
			end("lost", "its executor was lost; another attempt took the step over")
			list = append(list, attemptView{N: d.Attempt, Started: ev.CreatedAt, Outcome: "running"})
		case *world.StepRetrying:
			end("failed", d.Error.Message)
		case *world.StepFailed:
			end("failed", d.Error.Message)
		case *world.StepCompleted:
			end("completed", "")
		}
		attempts[ev.CorrelationID] = list
	}
	comps := compAttempts(events)
	var out []stepView
	for cursor := ""; ; {
		p, err := s.world.ListSteps(ctx, &world.ListStepsParams{RunID: run.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		for _, st := range p.Items {
			out = append(out, stepView{ID: st.StepID, Name: st.StepName, Status: string(st.Status), Attempt: st.Attempt,
				Input: s.pretty(st.Input), Output: s.pretty(st.Output), Attempts: attempts[st.StepID], Error: errorChain(st.Error),
				Comp: newCompView(run, &st, comps[st.StepID])})
		}
		if !p.HasMore {
			return out, nil
		}
		cursor = p.Cursor
	}
}

// hooksAndWaits reads the run's hooks and sleeps from its log. A webhook's
// token is shown redacted: it is the credential its URL needs.
func hooksAndWaits(events []world.Event, pretty func([]byte) string) ([]hookView, []waitView) {
	var hooks []hookView
	var waits []waitView
	hi, wi := map[string]int{}, map[string]int{}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *world.HookCreated:
			tok, child := d.Token, sdk.IsInternalToken(d.Token)
			if d.IsWebhook || child {
				tok = redact.Token(tok)
			}
			hi[ev.CorrelationID] = len(hooks)
			hooks = append(hooks, hookView{ID: ev.CorrelationID, Token: tok, Webhook: d.IsWebhook, Child: child, Active: true,
				Status: "waiting", Created: ev.CreatedAt, Metadata: pretty(d.Metadata)})
		case *world.HookReceived:
			if i, ok := hi[ev.CorrelationID]; ok {
				hooks[i].Status = "received"
				// The request a webhook received shows its token redacted.
				shown := redact.Event(ev).Data.(*world.HookReceived)
				hooks[i].Payloads = append(hooks[i].Payloads, pretty(shown.Payload))
			}
		case *world.HookDisposed:
			if i, ok := hi[ev.CorrelationID]; ok {
				hooks[i].Active = false
				hooks[i].Status = "disposed"
			}
		case *world.WaitCreated:
			wi[ev.CorrelationID] = len(waits)
			waits = append(waits, waitView{ID: ev.CorrelationID, Status: "waiting", Created: ev.CreatedAt, ResumeAt: d.ResumeAt})
		case *world.WaitCompleted:
			if i, ok := wi[ev.CorrelationID]; ok {
				waits[i].Status = "completed"
			}
		case *world.RunCompleted, *world.RunFailed, *world.RunCancelled:
			for i := range hooks {
				hooks[i].Active = false
			}
			how := "abandoned" // a timer the run did not need, or left
			if _, ok := d.(*world.RunCancelled); ok {
				how = "cancelled"
			}
			for i := range waits {
				if waits[i].Status == "waiting" {
					waits[i].Status = how
				}
			}
		}
	}
	return hooks, waits
}

// eventViews shows each event's data as indented JSON, webhook tokens and
// the run's secret redacted (redact.Event).
func eventViews(events []world.Event, pretty func([]byte) string) []eventView {
	out := make([]eventView, 0, len(events))
	for _, ev := range events {
		data := redact.Event(ev).Data
		b, err := json.Marshal(data)
		text := pretty(b)
		if err != nil {
			text = "(cannot be shown: " + err.Error() + ")"
		}
		out = append(out, eventView{Seq: ev.Seq, Type: string(ev.Type()), Correlation: ev.CorrelationID, At: ev.CreatedAt, Data: text})
	}
	return out
}

// maxShownPayload bounds a payload shown on a page: a run page shows each
// payload up to three times (the input, an event, a step), and a 5 MB one
// should not make it 20 MB.
const maxShownPayload = 64 << 10
