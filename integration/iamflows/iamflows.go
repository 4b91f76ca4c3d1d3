// Package iamflows holds the workflows the IAM test (integration/iam_test.go)
// needs beyond the demo's: a webhook with a static response, a webhook a step
// answers (the reply stream the webhook function reads), and a child run. The
// demo (examples/lambda/demo) has none of them, so the test runs them on a
// bootstrap built from ./bootstrap: examples/lambda's main with this registry.
package iamflows

import (
	"context"
	"net/http"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/workflow"
)

// StaticBody is what StaticWebhook's webhook answers with (status 200).
const StaticBody = "static answer"

// ReplyBody is what Reply answers a ManualWebhook's request with (status 201).
const ReplyBody = "answered by a step"

// StaticWebhook waits for one request on a webhook that answers 200 with
// StaticBody, and returns its body.
var StaticWebhook = workflow.New("iam-static-webhook", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{Response: &workflow.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(StaticBody),
	}})
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// Reply answers a manual webhook's request from a step.
var Reply = workflow.NewStep("iam-reply", func(ctx context.Context, req *workflow.Request) (string, error) {
	if err := req.Respond(ctx, workflow.Response{Status: http.StatusCreated, Body: []byte(ReplyBody)}); err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// ManualWebhook waits for one request on a manual webhook, answers it from a
// step (Reply) and returns its body.
var ManualWebhook = workflow.New("iam-manual-webhook", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{Manual: true})
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return Reply.Call(ctx, req)
})

// Parent runs demo.Serial(n) as a child run and returns its result.
var Parent = workflow.New("iam-parent", func(ctx workflow.Context, n int) (int, error) {
	return demo.Serial.Call(ctx, n)
})

// Registry is the demo's registry with this package's workflows.
func Registry() (*workflow.Registry, error) {
	r, err := demo.Registry()
	if err != nil {
		return nil, err
	}
	if err := r.Register(StaticWebhook, ManualWebhook, Reply, Parent); err != nil {
		return nil, err
	}
	return r, nil
}
