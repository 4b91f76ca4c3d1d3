package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/streams"
)

func main() {
	h, err := setup(context.Background())
	if err != nil {
		// Reported as an init error: Lambda shows the message and retries
		// the cold start on the next invocation.
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("skein: init failed", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

// setup reads the environment and builds the handler it asks for.
func setup(ctx context.Context) (any, error) {
	cfg, err := handler.ConfigFromEnv(nil)
	if err != nil {
		return nil, err
	}
	reg, err := demo.Registry()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	awsCfg, err := config.LoadDefaultConfig(ctx) // region, credentials, AWS_ENDPOINT_URL_*
	if err != nil {
		return nil, fmt.Errorf("AWS config: %w", err)
	}
	r := cfg.Resources
	clients := dynamoworld.NewClients(awsCfg, dynamoworld.ClientOptions{
		S3PathStyle: r.S3PathStyle,
		// Emulators' error answers lack the CRC32 header DynamoDB sends.
		Emulator: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != "",
	})
	// The first TLS handshake loads the system's root certificates: Go
	// parses the whole CA bundle, 10 to 20 ms of CPU. Done here, that is part
	// of the init phase, which runs at full CPU, instead of the first
	// invocation, which gets the function's share of a vCPU.
	if usesSystemRoots(awsCfg, clients) {
		_, _ = x509.SystemCertPool()
	}
	ss, err := streams.New(streams.Config{S3: clients.S3, Bucket: r.Bucket, Prefix: dynamoworld.DefaultPrefix + "streams/", Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	w, err := dynamoworld.New(ctx, dynamoworld.Config{
		DynamoDB: clients.DynamoDB, SQS: clients.SQS, S3: clients.S3, Streams: ss,
		Table: r.Table, QueueURL: r.QueueURL, Bucket: r.Bucket, ClaimCheckThreshold: r.ClaimCheckThreshold,
		Retention: r.Retention,
		// The stack created the resources; checking them would cost every
		// cold start three requests (and permissions the roles lack).
		SkipCheck: true,
		Logger:    cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	cfg.World, cfg.Registry = w, reg
	switch cfg.Kind {
	case handler.KindWebhook:
		return handler.NewWebhook(cfg)
	default:
		// Failed messages come back once their step lease has expired
		// rather than after the queue's whole visibility timeout.
		cfg.Queue = w
		return handler.NewSQS(cfg)
	}
}

// usesSystemRoots says whether a client talks TLS to its endpoint (AWS's
// own, or an https one) and checks it against the system's root
// certificates rather than a custom CA bundle (AWS_CA_BUNDLE).
func usesSystemRoots(cfg aws.Config, c dynamoworld.Clients) bool {
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		if tc := bc.GetTransport().TLSClientConfig; tc != nil && tc.RootCAs != nil {
			return false
		}
	}
	for _, e := range []*string{c.DynamoDB.Options().BaseEndpoint, c.SQS.Options().BaseEndpoint, c.S3.Options().BaseEndpoint} {
		if e == nil {
			return true
		}
		if u, err := url.Parse(*e); err != nil || u.Scheme != "http" {
			return true
		}
	}
	return false
}
