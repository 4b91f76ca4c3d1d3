package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/schedule"
	"github.com/skeinflow/skein/world"
)

// Schedule starts runs of a workflow on a cron schedule or at a fixed rate.
// A Worker given schedules (worker.Config.Schedules) fires them itself; on
// AWS an EventBridge Scheduler schedule sends a schedule message to the
// work queue instead (see package schedule and the README).
//
// Each firing starts one run whose idempotency key is
// "schedule:<name>:<RFC 3339 UTC time>" (the schedule's Name and the scheduled time),
// and whose attributes record the schedule (AttrSchedule) and the time
// (AttrScheduledTime): two workers on one store, or a worker restarted,
// start one run per firing.
type Schedule struct {
	// Name identifies the schedule in its runs' idempotency keys: unique
	// among the schedules of a World, and kept across deploys.
	Name string
	// Expr is a cron expression or a fixed rate ("0 8 * * MON-FRI",
	// "@daily", "@every 5m", "rate(1 hour)"); package schedule documents
	// the syntax.
	Expr string
	// TimeZone is the IANA name of the zone a cron expression's times are
	// in (default UTC); it must be in the system's time zone database (or
	// the program imports time/tzdata).
	TimeZone string
	// Workflow is the name of the workflow to start; the Worker's Registry
	// must hold it.
	Workflow string
	// Input is the workflow's input, encoded as JSON once, by worker.New,
	// which refuses one that does not decode into the workflow's input
	// type.
	Input any
	// CatchUp is how far back a starting Worker looks for a firing missed
	// while no worker ran: the latest firing in (now-CatchUp, now] starts
	// its run (a no-op if another worker started it); older missed
	// firings are skipped. Zero (the default) catches up on none.
	CatchUp time.Duration
}

// Run attributes of a scheduled run. Their keys start with ReservedPrefix:
// only the SDK sets them, and callers that try (WithAttributes,
// SetAttributes, Client.SetAttributes) are refused.
const (
	AttrSchedule      = "skein.schedule"      // the schedule's name
	AttrScheduledTime = "skein.scheduledTime" // the firing's time, RFC 3339 UTC
)

// newScheduleError returns the *RegistrationError of a schedule worker.New
// refuses: an expression that does not parse (err is a
// *schedule.ParseError), an unknown time zone or workflow, a missing or
// repeated name, an input that does not encode or does not fit the
// workflow's input type (err is a *RequestError).
func newScheduleError(name string, err error) *RegistrationError {
	return &RegistrationError{Kind: registrationSchedule, Name: name, Err: err}
}

// compiledSchedule is a checked Schedule.
type compiledSchedule struct {
	Schedule
	expr  *schedule.Expr
	input json.RawMessage
}

// compileSchedules checks a Worker's schedules against its Registry.
func compileSchedules(list []Schedule, reg *Registry) ([]*compiledSchedule, error) {
	out := make([]*compiledSchedule, 0, len(list))
	seen := map[string]bool{}
	for _, s := range list {
		cs, err := compileSchedule(s, reg)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, newScheduleError(s.Name, errors.New("two schedules have this name"))
		}
		seen[s.Name] = true
		out = append(out, cs)
	}
	return out, nil
}

func compileSchedule(s Schedule, reg *Registry) (*compiledSchedule, error) {
	if s.Name == "" {
		return nil, newScheduleError(s.Name, errors.New("no name"))
	}
	loc := time.UTC
	if s.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(s.TimeZone); err != nil {
			return nil, newScheduleError(s.Name, fmt.Errorf("time zone %q: %w", s.TimeZone, err))
		}
	}
	expr, err := schedule.Parse(s.Expr, loc)
	if err != nil {
		return nil, newScheduleError(s.Name, err)
	}
	if s.CatchUp < 0 {
		return nil, newScheduleError(s.Name, fmt.Errorf("negative CatchUp (%s)", s.CatchUp))
	}
	if _, ok := (engineRegistry{r: reg}).Workflow(s.Workflow); !ok {
		return nil, newScheduleError(s.Name, &RequestError{Kind: ErrUnknownWorkflow, Workflow: s.Workflow})
	}
	input, err := json.Marshal(s.Input)
	if err != nil {
		return nil, newScheduleError(s.Name, &SerializationError{What: "schedule input", Err: err})
	}
	if _, err := reg.checkInput(s.Workflow, input, false); err != nil {
		return nil, newScheduleError(s.Name, &RequestError{Kind: world.ErrInvalid, Workflow: s.Workflow, Err: err})
	}
	return &compiledSchedule{Schedule: s, expr: expr, input: input}, nil
}

// startFiring starts the run of one firing, or finds the run an earlier
// start of the same firing started (existed). A client given a Registry
// that does not hold the workflow still starts the run, which then fails
// as not registered: a schedule message names its workflow from outside.
func (c *Client) startFiring(ctx context.Context, f schedmsg.Firing) (runID string, existed bool, err error) {
	o := c.startOptions(ctx, nil)
	o.key = f.Key()
	// The firing's run, even if another deploy's worker started it with
	// the input its schedule had then.
	o.anyInput = true
	o.attributes = map[string]string{AttrSchedule: f.Name, AttrScheduledTime: f.Time.UTC().Format(time.RFC3339)}
	o.sdkAttrs = true
	return c.start(ctx, f.Workflow, f.Input, o)
}

// processFiring handles a schedule message.
func (p *Processor) processFiring(ctx context.Context, body []byte) error {
	f, err := schedmsg.DecodeMessage(body)
	if err != nil {
		return &engine.PermanentError{Reason: "malformed schedule message", Err: err}
	}
	log := p.log.With("schedule", f.Name, "scheduledTime", f.Time, "workflow", f.Workflow)
	if _, ok := (engineRegistry{r: p.client.reg}).Workflow(f.Workflow); !ok {
		log.Error("workflow: a schedule names a workflow that is not registered; its run will fail as not registered")
	}
	runID, existed, err := p.client.startFiring(ctx, f)
	if err != nil {
		return err
	}
	if existed {
		log.Info("workflow: schedule firing already started", "run", runID)
	} else {
		log.Info("workflow: schedule started a run", "run", runID)
	}
	return nil
}
