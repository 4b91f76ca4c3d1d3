// Package worker hosts Skein runs: a Worker consumes a World's queue and
// runs the workflows and steps of a workflow.Registry (with schedules and
// an HTTP server for webhooks), and a Processor handles one queue message
// at a time for a host that receives them itself (package handler on AWS
// Lambda). Its Config, EngineOptions and version filters tune both;
// WebhookHandler and QueuedWebhookHandler serve webhooks from a host's own
// HTTP server.
//
//	w, err := worker.New(worker.Config{World: world, Registry: registry})
//	err = w.Run(ctx) // until ctx ends
//
// Workflow code imports package workflow; package client starts and reads
// runs. The types here are aliases of internal/sdk's, whose comments are
// the full reference; each alias's comment lists its methods.
package worker
