package skeinlambda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// env is a function's environment as template.yaml sets it, with changes.
func env(kind string, extra ...string) func(string) string {
	m := map[string]string{
		envvars.Handler:  kind,
		envvars.Table:    "events",
		envvars.QueueURL: "http://sqs.local/000000000000/work",
		envvars.Bucket:   "data",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

// offline is an AWS configuration that needs no environment and makes no
// request (New makes none: the World skips its resource check).
func offline() Option {
	return WithAWSConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: aws.AnonymousCredentials{},
	})
}

func registry(t *testing.T) *workflow.Registry {
	t.Helper()
	step := workflow.NewStep("double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })
	wf := workflow.New("twice", func(ctx workflow.Context, n int) (int, error) { return step.Call(ctx, n) })
	reg := workflow.NewRegistry()
	if err := reg.Register(wf, step); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestNewServesTheHandlerTheEnvironmentNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kind string
		want func(any) bool
	}{
		{"flow", func(h any) bool { _, ok := h.(handler.SQSHandler); return ok }},
		{"webhook", func(h any) bool { _, ok := h.(handler.WebhookHandler); return ok }},
		{"WEBHOOK", func(h any) bool { _, ok := h.(handler.WebhookHandler); return ok }},
		{"api", func(h any) bool {
			// The same function type as the webhook's: tell them apart by an
			// answer that touches no World.
			api, ok := h.(handler.APIHandler)
			if !ok {
				return false
			}
			resp, err := api(context.Background(), events.LambdaFunctionURLRequest{RawPath: "/v1/nowhere"})
			return err == nil && resp.StatusCode == 404 && resp.Headers["Content-Type"] == "application/problem+json"
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			h, err := New(context.Background(), registry(t), offline(), WithGetenv(env(c.kind)))
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(h) {
				t.Errorf("SKEIN_HANDLER=%s: got a %T", c.kind, h)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		reg  bool
		env  func(string) string
		want []string
	}{
		{"no registry", false, env("flow"), []string{"no Registry"}},
		{"no handler", true, env(""), []string{"SKEIN_HANDLER is not set"}},
		{"unknown handler", true, env("graphql"), []string{`SKEIN_HANDLER="graphql"`}},
		{"every bad variable, by name", true, env("flow", envvars.Table, "", envvars.InlineConcurrency, "lots",
			envvars.MaxQueueDelay, "16m", envvars.VersionRetryDelay, "soon"),
			[]string{"SKEIN_TABLE is not set", "SKEIN_INLINE_CONCURRENCY", "SKEIN_MAX_QUEUE_DELAY=16m0s: SQS delays a message by at most 15m0s",
				"SKEIN_VERSION_RETRY_DELAY"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var reg *workflow.Registry
			if c.reg {
				reg = registry(t)
			}
			h, err := New(context.Background(), reg, offline(), WithGetenv(c.env))
			if err == nil {
				t.Fatalf("New = %T, want an error", h)
			}
			if h != nil {
				t.Errorf("New returned a non-nil handler (%T) with its error", h)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A setting WithHandlerConfig makes that the handler refuses: New returns
// no handler (not a typed nil inside a non-nil any) and an error matching
// world.ErrInvalid that names the field by its path.
func TestNewRefusesHandlerConfig(t *testing.T) {
	t.Parallel()
	h, err := New(context.Background(), registry(t), offline(), WithGetenv(env("flow")),
		WithHandlerConfig(func(c *handler.Config) { c.Worker.Engine.StepLeaseTTL = -time.Second }))
	if h != nil || !errors.Is(err, world.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "Config.Worker: engine: invalid config: Engine.StepLeaseTTL is negative") {
		t.Fatalf("New = %v (%T), %v: want nil and an ErrInvalid naming Config.Worker's Engine.StepLeaseTTL", h, h, err)
	}
}

// The options see what the environment set and override it, in order;
// the logger WithHandlerConfig leaves is the handler's and the World's.
func TestOptions(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	var world dynamoworld.Config
	var seen, hc handler.Config
	reg := registry(t)
	_, err := New(context.Background(), reg, offline(),
		WithGetenv(env("flow", envvars.InlineConcurrency, "3", envvars.ClaimCheckThreshold, "2048")),
		WithHandlerConfig(func(c *handler.Config) { seen = *c; c.Worker.Engine.InlineConcurrency = 5; c.Worker.Logger = logger }),
		WithWorldConfig(func(c *dynamoworld.Config) { world = *c }),
		WithHandlerConfig(func(c *handler.Config) { hc = *c }),
	)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Worker.Engine.InlineConcurrency != 3 {
		t.Errorf("WithHandlerConfig saw InlineConcurrency %d, want the environment's 3", seen.Worker.Engine.InlineConcurrency)
	}
	if hc.Worker.Engine.InlineConcurrency != 5 {
		t.Errorf("handler InlineConcurrency = %d, want the first option's 5", hc.Worker.Engine.InlineConcurrency)
	}
	if hc.Worker.Logger != logger || world.Logger != logger {
		t.Error("WithHandlerConfig's logger is not the handler's and the World's")
	}
	if seen.Worker.Registry != reg || seen.Worker.World != nil {
		t.Error("WithHandlerConfig did not see New's Registry, or saw a World")
	}
	// New succeeded offline: it skipped the World's check of the resources.
	if world.Table != "events" || world.Bucket != "data" || world.ClaimCheckThreshold != 2048 {
		t.Errorf("World config %+v: not the environment's resources", world)
	}
}

// An endpoint in the environment means emulators, whose answers lack the
// checksums AWS sends.
func TestEmulatorEndpoints(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		want bool
	}{
		{"AWS", nil, false},
		{"AWS_ENDPOINT_URL", []string{"AWS_ENDPOINT_URL", "http://127.0.0.1:4566"}, true},
		{"AWS_ENDPOINT_URL_DYNAMODB", []string{"AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var world dynamoworld.Config
			_, err := New(context.Background(), registry(t), offline(), WithGetenv(env("flow", c.env...)),
				WithWorldConfig(func(wc *dynamoworld.Config) { world = *wc }))
			if err != nil {
				t.Fatal(err)
			}
			ddb := world.DynamoDB.(*dynamodb.Client)
			if got := ddb.Options().DisableValidateResponseChecksum; got != c.want {
				t.Errorf("DisableValidateResponseChecksum = %v, want %v", got, c.want)
			}
		})
	}
}

// Start reports an init failure to the logger a WithHandlerConfig option
// chose, even when the environment is what failed; without one, to its
// own JSON lines on stderr (build returns no logger).
func TestInitFailureLogger(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	bad := env("flow", envvars.InlineConcurrency, "lots")
	_, got, err := build(context.Background(), registry(t), []Option{offline(), WithGetenv(bad),
		WithHandlerConfig(func(c *handler.Config) { c.Worker.Logger = logger })})
	if err == nil || got != logger {
		t.Errorf("build = %v, logger %p; want an error and the option's logger %p", err, got, logger)
	}
	_, got, err = build(context.Background(), registry(t), []Option{offline(), WithGetenv(bad),
		WithHandlerConfig(func(c *handler.Config) { c.Worker.Engine.MaxDeliveries = 9 })})
	if err == nil || got != nil {
		t.Errorf("build = %v, logger %v; want an error and no logger (the option chose none)", err, got)
	}
}
