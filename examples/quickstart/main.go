package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	db           string
	order        string
	fresh        bool
	sleep        time.Duration
	approveAfter time.Duration
	repair       bool
	ui           string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.db, "db", "skein-quickstart.db", "the local store `file` (created if missing)")
	fs.BoolVar(&o.repair, "repair-torn-tail", false, "drop an incomplete last record the store holds after a crash in the middle of a write (it was never acknowledged)")
	fs.StringVar(&o.order, "order", "1001", "the order `ID`; its run's idempotency key is quickstart-order-<ID>")
	fs.BoolVar(&o.fresh, "fresh", false, "place a new order (a new ID derived from -order) instead of resuming")
	fs.DurationVar(&o.sleep, "sleep", 2*time.Second, "the durable sleep until the courier's pickup slot (new orders only)")
	fs.DurationVar(&o.approveAfter, "approve-after", time.Second, "how long the approver takes to approve once asked")
	fs.StringVar(&o.ui, "ui", "", "serve the dashboard on `host:port` (e.g. 127.0.0.1:8089) with write access while the worker runs; it goes on serving after the order finishes, until Ctrl-C")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: go run ./examples/quickstart [flags]

Runs an order through a durable workflow on the local store: a retried payment,
a parallel stock reservation, an approval through a hook, a durable sleep and
the shipment. Kill it mid-run and start it again with the same -order: it
resumes the unfinished run. Started again after it finished, it prints the
recorded result.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "quickstart: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return nil, errors.New("usage")
	}
	if o.order == "" || o.sleep < 0 || o.approveAfter < 0 {
		fmt.Fprintln(stderr, "quickstart: -order must not be empty, -sleep and -approve-after not negative")
		return nil, errors.New("usage")
	}
	return &o, nil
}

// run is the program: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	p := &printer{out: stdout, start: time.Now()}

	w, err := localworld.Open(localworld.Config{Path: o.db, RepairTornTail: o.repair})
	if err != nil {
		switch {
		case errors.Is(err, localworld.ErrLocked):
			fmt.Fprintf(stderr, "quickstart: the store %s is in use by another process (another quickstart, or a skein command changing it).\n"+
				"Wait for it to finish, or pass -db with another file. A quickstart started with go run whose go command was\n"+
				"killed with kill -9 is still running: stop it with pkill -x quickstart.\n", o.db)
		case errors.Is(err, localworld.ErrTornTail):
			fmt.Fprintf(stderr, "quickstart: %v\nThe process writing it was killed in the middle of a write; that commit was never acknowledged.\n"+
				"Start again with -repair-torn-tail to drop it and keep everything before it.\n", err)
		default:
			fmt.Fprintf(stderr, "quickstart: %v\n", err)
		}
		return 1
	}
	defer w.Close()

	reg := workflow.NewRegistry()
	if err := reg.Register(definitions()...); err != nil {
		fmt.Fprintf(stderr, "quickstart: %v\n", err)
		return 1
	}
	wk, err := worker.New(worker.Config{
		World: w, Registry: reg, Concurrency: 4,
		Logger: slog.New(timelineShown{slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}),
		// A message in hand when the process is killed is redelivered after
		// Visibility, and a step cut off mid-attempt runs again when its lease
		// expires: keep both short, so a restart resumes promptly.
		Visibility: 10 * time.Second,
		Engine:     worker.EngineOptions{StepLeaseTTL: 5 * time.Second},
	})
	if err != nil {
		fmt.Fprintf(stderr, "quickstart: %v\n", err)
		return 1
	}
	wctx, stopWorker := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = wk.Run(wctx)
	}()
	defer func() { stopWorker(); <-stopped }()

	dashboard := ""
	if o.ui != "" {
		if dashboard, err = serveDashboard(wctx, wk, o.ui); err != nil {
			fmt.Fprintf(stderr, "quickstart: the dashboard: %v\n", err)
			return 1
		}
		p.plain("dashboard: %s (served by this worker, so its actions work)", dashboard)
	}

	code, err := placeOrder(ctx, w, wk.Client(), o, p)
	if err != nil {
		fmt.Fprintf(stderr, "quickstart: %v\n", err)
	}
	if dashboard != "" && ctx.Err() == nil {
		p.plain("the dashboard goes on serving on %s, and the worker on running; Ctrl-C to stop", dashboard)
		<-ctx.Done()
	}
	return code
}

// startAsPlaced starts the order of run runID again with the input it was
// placed with: its idempotency key returns that run.
func startAsPlaced(ctx context.Context, c *client.Client, runID string, key client.StartOption) (*client.Run[Result], error) {
	info, err := c.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	var placed Order
	if err := json.Unmarshal(info.Input, &placed); err != nil {
		return nil, fmt.Errorf("the input of run %s: %w", runID, err)
	}
	return fulfilOrder.Start(ctx, c, placed, key)
}

// placeOrder starts the order's run, or finds it, follows it to its end and
// prints the result.
func placeOrder(ctx context.Context, w world.World, c *client.Client, o *options, p *printer) (int, error) {
	orderID := o.order
	if o.fresh {
		orderID += "-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	}
	order := newOrder(orderID, o.sleep)
	order.ReceiptDir = o.db + ".receipts"
	p.plain("Skein quickstart: order %s (%d lines, %s) on %s", orderID, len(order.Lines), money(order.TotalCents()), o.db)

	// The same order has the same key, so a second start returns the run the
	// first one started, finished or not.
	before := time.Now()
	key := client.WithIdempotencyKey("quickstart-order-" + orderID)
	run, err := fulfilOrder.Start(ctx, c, order, key)
	if ce := (*client.RequestError)(nil); errors.As(err, &ce) && ce.Kind == world.ErrConflict && ce.InputDiffers {
		// The order was placed with other settings (-sleep applies to new
		// orders only): go on with it as it was placed.
		run, err = startAsPlaced(ctx, c, ce.RunID, key)
	}
	if err != nil {
		return 1, err
	}
	info, err := run.Info(ctx)
	if err != nil {
		return 1, err
	}
	if info.Status.Terminal() {
		p.plain("order %s already finished: run %s %s at %s (pass -fresh for a new order)",
			orderID, run.ID(), info.Status, info.CompletedAt.Local().Format("2006-01-02 15:04:05"))
		return report(ctx, run, p)
	}

	wa := newWatcher(w, run.ID(), p)
	var streamFrom int64
	if resumed := info.CreatedAt.Before(before); resumed {
		summary, err := wa.catchUp(ctx)
		if err != nil {
			return 1, err
		}
		p.plain("resuming run %s, created %s (%s)", run.ID(), info.CreatedAt.Local().Format("15:04:05"), summary)
		if wa.waiting != "" {
			p.line("%s", wa.waiting)
		}
		if err := reportCutOff(ctx, w, wa, p); err != nil {
			return 1, err
		}
		si, err := c.StreamInfo(ctx, run.ID(), "")
		if err != nil {
			return 1, err
		}
		streamFrom = si.TailIndex + 1
	} else {
		p.plain("started run %s (%s)", run.ID(), fulfilOrder.Name())
	}

	// Follow the run: its events, its output stream, and the approver.
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	events, stream := make(chan struct{}), make(chan struct{})
	go func() { defer close(events); _ = wa.follow(fctx) }()
	go func() { defer close(stream); printStream(fctx, c, run.ID(), streamFrom, p) }()
	go approve(fctx, c, approvalToken(orderID), o.approveAfter, p)

	// Wait for the run's end; report tells how it ended.
	_, err = run.Result(ctx)
	var failed *workflow.RunFailedError
	switch {
	case ctx.Err() != nil:
		stopFollowing()
		<-events
		<-stream
		p.plain("interrupted: run %s is unfinished; start the quickstart again with -order %s to resume it", run.ID(), orderID)
		return 130, nil
	case err != nil && !errors.As(err, &failed) && !errors.Is(err, workflow.ErrRunCancelled):
		return 1, err
	}
	// Let the printers reach the run's end (the stream closes with it).
	for _, ch := range []chan struct{}{events, stream} {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
		}
	}
	stopFollowing()
	return report(ctx, run, p)
}

// report prints a finished run's outcome.
func report(ctx context.Context, run *client.Run[Result], p *printer) (int, error) {
	info, err := run.Info(ctx)
	if err != nil {
		return 1, err
	}
	res, err := run.Result(ctx)
	var failed *workflow.RunFailedError
	switch {
	case errors.As(err, &failed):
		p.plain("the order was not shipped: the run failed (%s): %v", failed.Code, failed.Cause)
		return 1, nil
	case errors.Is(err, workflow.ErrRunCancelled):
		p.plain("the order was not shipped: the run was cancelled (%s)", info.CancelReason)
		return 1, nil
	case err != nil:
		return 1, err
	}
	p.plain("order %s shipped in %s: tracking %s, charged %s (payment attempt %d), %d lines reserved, approved by %s",
		res.OrderID, info.CompletedAt.Sub(info.CreatedAt).Round(10*time.Millisecond), res.Tracking, money(res.ChargedCents),
		res.PaymentAttempts, len(res.Reserved), res.ApprovedBy)
	b, err := json.Marshal(res)
	if err != nil {
		return 1, err
	}
	p.plain("result %s", b)
	// Result returned once the cleanup hook's outcome was recorded.
	if info, err = run.Info(ctx); err != nil {
		return 1, err
	}
	var order Order
	if json.Unmarshal(info.Input, &order) == nil && receiptPath(order) != "" {
		p.plain("receipt archived to %s (cleanup %s)", receiptPath(order), info.Cleanup)
	}
	return 0, nil
}

// reportCutOff tells of steps the previous process was running when it
// stopped: they run again once that process's leases expire.
func reportCutOff(ctx context.Context, w world.World, wa *watcher, p *printer) error {
	var cut []string
	cursor := ""
	for {
		page, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: wa.runID, Pagination: world.Pagination{Cursor: cursor}})
		if err != nil {
			return err
		}
		for _, st := range page.Items {
			if st.Status == world.StepStatusRunning {
				cut = append(cut, wa.labels[st.StepID])
			}
		}
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	if len(cut) > 0 {
		p.line("the last process stopped in the middle of %s: they run again once its leases expire (up to 30s)", strings.Join(cut, ", "))
	}
	return nil
}

// approve plays the outside world: a person who sees the order waiting for
// approval and, after a moment, approves it with the hook's token.
func approve(ctx context.Context, c *client.Client, token string, after time.Duration, p *printer) {
	for {
		if _, err := c.GetHookByToken(ctx, token); err == nil {
			break
		}
		if !pause(ctx, 20*time.Millisecond) {
			return
		}
	}
	if !pause(ctx, after) {
		return
	}
	a := Approval{Approved: true, By: "dana@shop.example", Note: "looks good, ship it"}
	if _, err := c.ResumeHook(ctx, token, a); err != nil && ctx.Err() == nil {
		p.line("approver: %v", err)
	}
}

// pause waits for d, or reports false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// timelineShown drops the worker's log records that the timeline already
// shows (a step's retry), so they do not cut into it; other warnings and
// errors go to stderr.
type timelineShown struct{ slog.Handler }

func (h timelineShown) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "step retrying" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h timelineShown) WithAttrs(as []slog.Attr) slog.Handler {
	return timelineShown{h.Handler.WithAttrs(as)}
}

func (h timelineShown) WithGroup(name string) slog.Handler {
	return timelineShown{h.Handler.WithGroup(name)}
}
