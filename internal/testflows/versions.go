package testflows

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// The versioned order: a workflow deployed as v1 and as v2 under runs in
// flight, on any World (VersionScenarios). v1 reserves stock, waits (for a
// hook, or a sleep, or not at all) and ships. v2 adds a fraud check before
// the reserve and drops the reserve (both points the runs in flight went
// past), and adds a gift wrap after the wait (a point they have not
// reached). Patched, v2 guards its changes with workflow.Patched;
// unpatched, it simply calls what it calls, and the runs of v1 diverge.

// VOrder is the versioned order's input: Wait is "hook", "sleep" or "".
type VOrder struct {
	ID   string `json:"id"`
	Wait string `json:"wait,omitempty"`
}

// VOrderToken is the token of the hook an order that waits for one waits on.
func VOrderToken(id string) string { return "vorder/" + id }

type vorderSteps struct {
	fraud, reserve, wrap, ship *workflow.Step[string, string]
}

func newVOrderSteps() vorderSteps {
	mk := func(name string) *workflow.Step[string, string] {
		return workflow.NewStep(name, func(_ context.Context, in string) (string, error) { return name + ":" + in, nil })
	}
	return vorderSteps{mk("fraud-check"), mk("reserve"), mk("gift-wrap"), mk("ship")}
}

// vorder builds a version of the workflow: 1, or 2 patched or not.
func vorder(s vorderSteps, version int, patched bool, sleep time.Duration) *workflow.Workflow[VOrder, []string] {
	return workflow.New("versioned-order", func(ctx workflow.Context, o VOrder) ([]string, error) {
		var trail []string
		call := func(st *workflow.Step[string, string]) error {
			out, err := st.Call(ctx, o.ID)
			trail = append(trail, out)
			return err
		}
		v2 := version == 2
		if v2 && (!patched || workflow.Patched(ctx, "add-fraud-check")) {
			if err := call(s.fraud); err != nil {
				return nil, err
			}
		}
		if !v2 || (patched && !workflow.Patched(ctx, "remove-reserve")) {
			if err := call(s.reserve); err != nil {
				return nil, err
			}
		}
		switch o.Wait {
		case "hook":
			v, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: VOrderToken(o.ID)}).Receive(ctx)
			if err != nil {
				return nil, err
			}
			trail = append(trail, v)
		case "sleep":
			if err := workflow.Sleep(ctx, sleep); err != nil {
				return nil, err
			}
		}
		if v2 && (!patched || workflow.Patched(ctx, "add-gift-wrap")) {
			if err := call(s.wrap); err != nil {
				return nil, err
			}
		}
		return trail, call(s.ship)
	})
}

// Deployment is one deploy of the versioned order's code: its registry, the
// version it records on the runs it starts, and the versions it runs.
type Deployment struct {
	Registry *workflow.Registry
	Version  string
	Versions worker.VersionFilter
	Logger   *slog.Logger
	Engine   worker.EngineOptions
	// Knobs are passed to the executors' constructors.
	Knobs []knobs.Option
}

// Deploy starts executors of d on the World under test and returns a client
// that starts runs as d.Version, and a stop that waits for them to end.
type Deploy func(t *testing.T, d Deployment) (client *skclient.Client, stop func())

// VersionScenarios runs the deploy scenarios of the versioned order on the
// World deploy serves; sleep is how long the sleeping orders sleep (long
// enough to switch deployments meanwhile).
func VersionScenarios(t *testing.T, deploy Deploy, sleep time.Duration) {
	t.Run("patch", func(t *testing.T) { patchScenario(t, deploy, sleep) })
	t.Run("pin", func(t *testing.T) { pinScenario(t, deploy) })
}

// vrun is a run of the scenario and the trail it must end with.
type vrun struct {
	run  *skclient.Run[[]string]
	want []string
}

// patchScenario: runs of v1 suspended at a hook and at a sleep meet v2
// without patches and are held, with the divergence shown; v1 deployed
// again resumes one, v2 with patches the other, and a run of v2 takes the
// new path throughout.
//
// A held run is retried at once by RetryRun, or resumed by any other of
// its continuations the code now deployed takes (an old timer's, a
// duplicate: they replay a held run too, see the engine's hold.go), which
// RetryRun may then find running or finished. The sleeping run is given
// such a continuation, one the executors of v2 did not get to before they
// stopped (on a busy machine they often do not), and it resumes the run
// before the test retries it: what used to fail the scenario now and then
// ("is completed, not held" from RetryRun) happens every time. And a
// message of the hooked run may still be on its way when v2 without
// patches is stopped (a delivery not yet acknowledged comes back after its
// visibility, more so on a slow backend): so the sleeping run is started
// as version v1b, and v1 comes back pinned to v1b, so that it can resume
// that run only. The hooked run then goes on under v2 with patches,
// whether by such a message or by RetryRun, and its trail says which code
// ran it.
func patchScenario(t *testing.T, deploy Deploy, sleep time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newVOrderSteps()
	reg := func(wf *workflow.Workflow[VOrder, []string]) *workflow.Registry {
		return workflow.NewRegistry().MustRegister(wf, s.fraud, s.reserve, s.wrap, s.ship)
	}
	v1, v2bad, v2 := vorder(s, 1, false, sleep), vorder(s, 2, false, sleep), vorder(s, 2, true, sleep)

	client, stop := deploy(t, Deployment{Registry: reg(v1), Version: "v1"})
	hooked, err := v1.Start(ctx, client, VOrder{ID: "a", Wait: "hook"})
	if err != nil {
		t.Fatal(err)
	}
	v1b, err := skclient.New(skclient.Config{World: sdk.ClientWorld(client), Registry: reg(v1), Version: "v1b"})
	if err != nil {
		t.Fatal(err)
	}
	asleep, err := v1.Start(ctx, v1b, VOrder{ID: "b", Wait: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "v1 suspended at its hook and its sleep", func() bool {
		_, err := client.GetHookByToken(ctx, VOrderToken("a"))
		return err == nil && hasEvent(ctx, client, asleep.ID(), world.EventWaitCreated)
	})
	stop()

	client, stop = deploy(t, Deployment{Registry: reg(v2bad), Version: "v2"})
	if _, err := client.ResumeHook(ctx, VOrderToken("a"), "ok"); err != nil {
		t.Fatal(err)
	}
	for id, version := range map[string]string{hooked.ID(): "v1", asleep.ID(): "v1b"} {
		waitUntil(t, ctx, "v2 without patches to hold "+id, func() bool {
			info, err := client.GetRun(ctx, id)
			return err == nil && info.Status == world.RunStatusHeld
		})
		info, err := client.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprint(info.Hold.Err)
		if info.Hold.Code != world.CodeReplayDivergence || info.ErrorCode != "" || info.Version != version ||
			!strings.Contains(msg, "reserve") || !strings.Contains(msg, "fraud-check") {
			t.Fatalf("held run %s: code %q error code %q version %q: %s; want REPLAY_DIVERGENCE naming reserve and fraud-check, of version %s",
				id, info.Hold.Code, info.ErrorCode, info.Version, msg, version)
		}
	}
	stop()
	body, err := world.EncodeMessage(world.Message{RunID: asleep.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.ClientWorld(client).Enqueue(ctx, &world.EnqueueParams{Body: body}); err != nil {
		t.Fatal(err)
	}

	// Back to v1, for the sleeping run only: it resumes where it stopped,
	// by the continuation left for it.
	client, stop = deploy(t, Deployment{Registry: reg(v1), Version: "v1b", Versions: worker.Versions{"v1b"}})
	waitUntil(t, ctx, "the continuation left for "+asleep.ID()+" to resume it", func() bool {
		info, err := client.GetRun(ctx, asleep.ID())
		return err == nil && info.Status.Terminal()
	})
	wantEnd(t, ctx, client, vrun{asleep, []string{"reserve:b", "ship:b"}}, true)
	stop()

	// Forward to v2 with its patches: the hooked run resumes on the old
	// path before its hook and the new one after it; a new run takes the
	// new path throughout.
	client, stop = deploy(t, Deployment{Registry: reg(v2), Version: "v2"})
	defer stop()
	wantEnd(t, ctx, client, vrun{hooked, []string{"reserve:a", "ok", "gift-wrap:a", "ship:a"}}, true)
	fresh, err := v2.Start(ctx, client, VOrder{ID: "c", Wait: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	wantEnd(t, ctx, client, vrun{fresh, []string{"fraud-check:c", "gift-wrap:c", "ship:c"}}, false)
	if info, err := client.GetRun(ctx, fresh.ID()); err != nil || info.Version != "v2" {
		t.Fatalf("the new run: %+v, %v; want version v2", info, err)
	}
}

// pinScenario: v1 and v2 (without patches) are deployed side by side, each
// pinned to its own version. Runs of v1 suspended at a hook and at a sleep
// complete on v1, a run of v2 on v2, none is held; a run of a version no
// one runs waits, neither failed nor held nor dropped, however often it is
// refused, until an executor of its version is deployed.
func pinScenario(t *testing.T, deploy Deploy) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newVOrderSteps()
	reg := func(wf *workflow.Workflow[VOrder, []string]) *workflow.Registry {
		return workflow.NewRegistry().MustRegister(wf, s.fraud, s.reserve, s.wrap, s.ship)
	}
	const sleep = 300 * time.Millisecond
	v1, v2bad := vorder(s, 1, false, sleep), vorder(s, 2, false, sleep)
	logs := &logBuffer{}
	// Refusals come back fast, and a run whose messages were delivered
	// more than twice would fail were refusals counted.
	eng := worker.EngineOptions{MaxDeliveries: 2}
	retry := []knobs.Option{knobs.WithVersionRetry(10*time.Millisecond, 100*time.Millisecond)}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	// A run that does not end leaves its executors' logs behind: which
	// refused it last, and when, tells a lost message from a slow one.
	defer func() {
		if t.Failed() {
			t.Logf("the executors' logs:\n%s", logs.String())
		}
	}()
	c1, stop1 := deploy(t, Deployment{Registry: reg(v1), Version: "v1", Versions: worker.Versions{"v1"}, Logger: logger, Engine: eng, Knobs: retry})
	c2, stop2 := deploy(t, Deployment{Registry: reg(v2bad), Version: "v2", Versions: worker.Versions{"v2"}, Logger: logger, Engine: eng, Knobs: retry})
	defer stop2()
	// A client of a version no executor runs (yet).
	c0, err := skclient.New(skclient.Config{World: sdk.ClientWorld(c1), Registry: reg(v1), Version: "v0"})
	if err != nil {
		t.Fatal(err)
	}

	var runs []vrun
	start := func(c *skclient.Client, o VOrder, want ...string) *skclient.Run[[]string] {
		r, err := v1.Start(ctx, c, o) // by name: the registry of c's deployment decides
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, vrun{r, want})
		return r
	}
	start(c1, VOrder{ID: "a", Wait: "hook"}, "reserve:a", "ok", "ship:a")
	start(c1, VOrder{ID: "b", Wait: "sleep"}, "reserve:b", "ship:b")
	start(c2, VOrder{ID: "c", Wait: "hook"}, "fraud-check:c", "ok", "gift-wrap:c", "ship:c")
	orphan := start(c0, VOrder{ID: "d"}, "reserve:d", "ship:d")
	for _, id := range []string{"a", "c"} {
		waitUntil(t, ctx, "the hook of "+id, func() bool { _, err := c1.GetHookByToken(ctx, VOrderToken(id)); return err == nil })
		if _, err := c1.ResumeHook(ctx, VOrderToken(id), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs[:3] {
		wantEnd(t, ctx, c1, r, false)
	}
	waitUntil(t, ctx, "the run of v0 refused more often than MaxDeliveries", func() bool {
		return strings.Count(logs.String(), "version=v0") > 2*eng.MaxDeliveries
	})
	if !strings.Contains(logs.String(), "compatible executor") {
		t.Fatalf("no log line says why the run of v0 waits:\n%s", logs.String())
	}
	if info, err := c1.GetRun(ctx, orphan.ID()); err != nil || info.Status != world.RunStatusPending || info.Version != "v0" {
		t.Fatalf("the run of v0 with no executor: %+v, %v; want pending, of version v0", info, err)
	}
	// Drained: no run of v1 is left unfinished, so v1 goes, and an
	// executor of v0 takes the orphan on.
	stop1()
	_, stop0 := deploy(t, Deployment{Registry: reg(v1), Version: "v0", Versions: worker.Versions{"v0"}, Logger: logger, Engine: eng, Knobs: retry})
	defer stop0()
	wantEnd(t, ctx, c2, runs[3], false)
}

// wantEnd waits for r's run to end (retrying it at once if held and retry)
// and checks its trail; a run held without retry fails the test. A run to
// retry that has already ended (a message of its own reached the code that
// fits it first) is no failure: its trail tells which code ran it.
func wantEnd(t *testing.T, ctx context.Context, c *skclient.Client, r vrun, retry bool) {
	t.Helper()
	id := r.run.ID()
	if retry {
		retryHeld(t, ctx, c, id)
	}
	defer func() {
		if t.Failed() && ctx.Err() != nil {
			t.Logf("run %s as it stood: %s", id, describeRun(c, id))
		}
	}()
	waitUntil(t, ctx, "run "+id+" to end", func() bool {
		info, err := c.GetRun(ctx, id)
		if err == nil && info.Status == world.RunStatusHeld && !retry {
			t.Fatalf("run %s held: %v", id, info.Hold.Err)
		}
		return err == nil && info.Status.Terminal()
	})
	var got []string
	if err := c.Result(ctx, id, &got); err != nil || !slices.Equal(got, r.want) {
		t.Fatalf("run %s: %q, %v; want %q", id, got, err, r.want)
	}
}

// retryHeld retries held run id at once (RetryRun). Another continuation
// of the run may have replayed it with the code now deployed first (see
// patchScenario): RetryRun then refuses, the run being live (ErrInvalid)
// or finished (ErrConflict), not held, which is fine; a refusal of a run
// still held, or any other error, fails the test.
func retryHeld(t *testing.T, ctx context.Context, c *skclient.Client, id string) {
	t.Helper()
	err := c.RetryRun(ctx, id)
	if err == nil {
		return
	}
	info, gerr := c.GetRun(ctx, id)
	if gerr != nil || info.Status == world.RunStatusHeld || !errors.Is(err, world.ErrConflict) && !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("RetryRun(%s): %v (the run: %+v, %v)", id, err, info, gerr)
	}
}

// describeRun tells where a run stands (its status, version and last
// events), for a test that timed out waiting for it.
func describeRun(c *skclient.Client, runID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.GetRun(ctx, runID)
	if err != nil {
		return err.Error()
	}
	p, err := sdk.ClientWorld(c).ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		return err.Error()
	}
	var last []string
	for _, e := range p.Items[max(0, len(p.Items)-8):] {
		last = append(last, string(e.Type()))
	}
	return fmt.Sprintf("%s, version %q, events ... %s", info.Status, info.Version, strings.Join(last, " "))
}

func hasEvent(ctx context.Context, c *skclient.Client, runID string, typ world.EventType) bool {
	p, err := sdk.ClientWorld(c).ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(p.Items, func(e world.Event) bool { return e.Type() == typ })
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logBuffer collects log output written from many goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
