package workflow_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// serve runs a worker for defs on w until the returned function is called:
// a deploy of that code. cfg tunes the worker.
func serve(w world.World, cfg worker.Config, defs ...workflow.Definition) (*worker.Worker, func()) {
	cfg.World, cfg.Registry = w, workflow.NewRegistry().MustRegister(defs...)
	wk, err := worker.New(cfg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	return wk, func() { cancel(); <-done }
}

var chargeStep = workflow.NewStep("charge", func(ctx context.Context, cents int) (int, error) { return cents, nil })

// sendLink stands for a step that mails a webhook's URL to whoever will
// call it; here it writes the URL to the run's default stream.
var sendLink = workflow.NewStep("send-link", func(ctx context.Context, url string) (struct{}, error) {
	_, err := workflow.Writer(ctx, "").Write([]byte(url))
	return struct{}{}, err
})

var awaitDelivery = workflow.New("await-delivery", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{})
	defer wh.Dispose(ctx)
	if _, err := sendLink.Call(ctx, wh.URL()); err != nil {
		return "", err
	}
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s", req.Method, req.Body), nil
})

func ExampleNewWebhook() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	// The worker serves webhooks; in production, mount worker.WebhookHandler.
	wk, stop := serve(w, worker.Config{WebhookAddr: "127.0.0.1:0"}, awaitDelivery, sendLink)
	defer stop()
	ctx := context.Background()
	c := wk.Client()

	run, _ := awaitDelivery.Start(ctx, c, struct{}{})
	// The link the workflow sent: its path holds the webhook's token.
	var path string
	for chunk, err := range c.ReadStream(ctx, run.ID(), client.StreamOptions{}) {
		if err != nil {
			panic(err)
		}
		path = string(chunk.Data)
		break
	}
	resp, err := http.Post(wk.WebhookURL()+path, "text/plain", strings.NewReader("parcel 7 delivered"))
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	fmt.Println("webhook answered", resp.StatusCode)
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output:
	// webhook answered 202
	// POST parcel 7 delivered <nil>
}

var progressNote = workflow.NewStep("progress-note", func(ctx context.Context, n int) (int, error) {
	// "" is the run's default stream.
	fmt.Fprintf(workflow.Writer(ctx, ""), "squaring %d", n)
	return n * n, nil
})

var squared = workflow.New("squared", func(ctx workflow.Context, n int) (int, error) {
	return progressNote.Call(ctx, n)
})

func ExampleWriter() {
	c, stop := runLocal(squared, progressNote)
	defer stop()
	ctx := context.Background()

	run, _ := squared.Start(ctx, c, 12)
	out, _ := run.Result(ctx)
	// StreamOptions{} reads the default stream.
	for chunk, err := range c.ReadStream(ctx, run.ID(), client.StreamOptions{}) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s\n", chunk.Data)
	}
	fmt.Println(out)
	// Output:
	// squaring 12
	// 144
}

var loggingFlow = workflow.New("logging", func(ctx workflow.Context, cents int) (int, error) {
	log := ctx.Logger() // carries the run ID and the workflow's name
	log.Info("charging", "cents", cents)
	charged, err := chargeStep.Call(ctx, cents)
	if err != nil {
		return 0, err
	}
	// The workflow is replayed after each step and wait; a line already
	// printed is not printed again.
	log.Info("charged; waiting a moment")
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return 0, err
	}
	log.Info("done")
	return charged, nil
})

func ExampleContext_Logger() {
	// Keep the example's output stable: no time, no run ID.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "run" || a.Key == "durationMs" {
				return slog.Attr{}
			}
			return a
		},
	}))
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	wk, stop := serve(w, worker.Config{Logger: logger}, loggingFlow, chargeStep)
	defer stop()
	ctx := context.Background()

	run, _ := loggingFlow.Start(ctx, wk.Client(), 1250)
	_, _ = run.Result(ctx)
	// The worker's logger also gets the run's lifecycle, as it commits.
	// Output:
	// level=INFO msg=charging workflow=logging cents=1250
	// level=INFO msg="run started" workflow=logging
	// level=INFO msg="charged; waiting a moment" workflow=logging
	// level=INFO msg=done workflow=logging
	// level=INFO msg="run completed" workflow=logging
}
