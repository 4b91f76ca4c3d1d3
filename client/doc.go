// Package client is what starts, steers and reads Skein runs: a Client on
// a World (localworld, dynamoworld) starts runs by name or through a
// typed workflow.Workflow (Workflow.Start and Workflow.Get return a *Run),
// cancels, fails and retries them, resumes hooks, follows runs as they
// commit (Subscribe), reads their streams and lists them.
//
//	c, err := client.New(client.Config{World: w, Registry: registry})
//	run, err := fulfil.Start(ctx, c, order, client.WithIdempotencyKey(order.ID))
//	shipment, err := run.Result(ctx)
//
// Workflow code imports package workflow; a host imports package worker.
// The types here are aliases of internal/sdk's, whose comments are the
// full reference; each alias's comment lists its methods.
package client
