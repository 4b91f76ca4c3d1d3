// Command bootstrap is examples/lambda's bootstrap with iamflows' registry
// (the demo's workflows and the IAM test's): the setup below is
// examples/lambda/main.go's, less its TLS warm-up. Built and run only by
// integration/iam_test.go.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/integration/iamflows"
	"github.com/skeinflow/skein/streams"
)

func main() {
	h, err := setup(context.Background())
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("skein: init failed", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

func setup(ctx context.Context) (any, error) {
	cfg, err := handler.ConfigFromEnv(nil)
	if err != nil {
		return nil, err
	}
	reg, err := iamflows.Registry()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS config: %w", err)
	}
	r := cfg.Resources
	clients := dynamoworld.NewClients(awsCfg, dynamoworld.ClientOptions{
		S3PathStyle: r.S3PathStyle,
		Emulator:    os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != "",
	})
	ss, err := streams.New(streams.Config{S3: clients.S3, Bucket: r.Bucket, Prefix: dynamoworld.DefaultPrefix + "streams/", Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	w, err := dynamoworld.New(ctx, dynamoworld.Config{
		DynamoDB: clients.DynamoDB, SQS: clients.SQS, S3: clients.S3, Streams: ss,
		Table: r.Table, QueueURL: r.QueueURL, Bucket: r.Bucket, ClaimCheckThreshold: r.ClaimCheckThreshold,
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
		cfg.Queue = w
		return handler.NewSQS(cfg)
	}
}
