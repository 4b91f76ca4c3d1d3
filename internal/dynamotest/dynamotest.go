package dynamotest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/middleware"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// Require skips (or, with SKEIN_REQUIRE_EMULATORS=1, fails) t unless the
// emulator environment is set.
func Require(t testing.TB) {
	t.Helper()
	env := envvars.Read(nil)
	if env.Emulators == "1" {
		return
	}
	const why = "SKEIN_EMULATORS is not 1: no AWS-compatible endpoints (run: bash localstack/emulators.sh start && eval \"$(bash localstack/emulators.sh env)\")"
	if env.RequireEmulators == "1" {
		t.Fatal(why + "; SKEIN_REQUIRE_EMULATORS=1 forbids skipping")
	}
	t.Skip(why)
}

// Options tune the World NewWorld builds.
type Options struct {
	// Config is the World's configuration; the clients, table, queue and
	// bucket are filled in.
	Config dynamoworld.Config
	// Clients tunes the SDK clients (path style and emulator settings come
	// from the environment).
	Clients dynamoworld.ClientOptions
	// APIOptions go on every client's middleware stack (a Meter's or an
	// Injector's Add).
	APIOptions []func(*middleware.Stack) error
	// Knobs are the World's options (a clock, the run cache...).
	Knobs []knobs.Option
}

// Clients returns SDK clients for the environment's endpoints, with mw on
// every client's middleware stack (a Meter's or an Injector's Add).
func Clients(t testing.TB, o dynamoworld.ClientOptions, mw ...func(*middleware.Stack) error) dynamoworld.Clients {
	t.Helper()
	return ClientsWith(t, o, nil, mw...)
}

// ClientsWith is Clients with NewClients' options (knobs.WithMaxBackoff).
func ClientsWith(t testing.TB, o dynamoworld.ClientOptions, opts []knobs.Option, mw ...func(*middleware.Stack) error) dynamoworld.Clients {
	t.Helper()
	Require(t)
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("dynamotest: AWS config: %v", err)
	}
	cfg.APIOptions = append(cfg.APIOptions, mw...)
	env := envvars.Read(nil)
	o.S3PathStyle = o.S3PathStyle || env.S3PathStyle == "1"
	o.Emulator = o.Emulator || env.Emulators == "1"
	return dynamoworld.NewClients(cfg, o, opts...)
}

var names = world.NewIDSource(nil, nil)

// NewResources creates a fresh table, queue and bucket with unique names
// and deletes them when the test ends. It returns their names and the
// queue's URL.
func NewResources(t testing.TB, c dynamoworld.Clients) (dynamoworld.Resources, string) {
	t.Helper()
	id := strings.ToLower(names.New(""))
	r := dynamoworld.Resources{Table: "skein-" + id, Queue: "skein-" + id, Bucket: "skein-" + id}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := dynamoworld.CreateResources(ctx, c, r)
	if err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamoworld.DeleteResources(ctx, c, r, url); err != nil {
			t.Logf("dynamotest: cleaning up: %v", err)
		}
	})
	return r, url
}

// NewWorld returns a World on fresh resources (NewResources). The caller
// closes it.
func NewWorld(t testing.TB, o Options) *dynamoworld.World {
	t.Helper()
	c := Clients(t, o.Clients, o.APIOptions...)
	r, url := NewResources(t, c)
	cfg := o.Config
	cfg.DynamoDB, cfg.SQS, cfg.S3 = c.DynamoDB, c.SQS, c.S3
	cfg.Table, cfg.QueueURL, cfg.Bucket = r.Table, url, r.Bucket
	w, err := dynamoworld.New(context.Background(), cfg, o.Knobs...)
	if err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	return w
}

// Config returns a Config on existing resources, for a second World sharing
// them (another "process").
func Config(c dynamoworld.Clients, r dynamoworld.Resources, queueURL string) dynamoworld.Config {
	return dynamoworld.Config{
		DynamoDB: c.DynamoDB, SQS: c.SQS, S3: c.S3,
		Table: r.Table, QueueURL: queueURL, Bucket: r.Bucket,
	}
}

// Endpoint returns the endpoint the SDK uses for a service ("DYNAMODB",
// "SQS", "S3"), or "" for AWS's own.
func Endpoint(service string) string { return envvars.Read(nil).ServiceEndpoint(service) }
