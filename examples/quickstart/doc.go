// Command quickstart runs an order through a durable Skein workflow on the
// local world, in one file on disk: a payment that fails once and is
// retried, stock reserved for every line item in parallel, a person's
// approval arriving through a hook, a durable sleep until the courier's
// pickup slot, and the shipment. It prints the run's events and the output
// stream its steps write, as they happen.
//
//	go run ./examples/quickstart              # place order 1001, or resume it
//	go run ./examples/quickstart -fresh       # place a new order
//	go run ./examples/quickstart -sleep 10s   # a longer sleep, to kill it in
//
// Kill it (Ctrl-C, or kill -9) while it sleeps or waits for approval, and
// start it again: the order's idempotency key makes Start return the
// unfinished run, and the worker finishes it from its event log. Started
// once more, it prints the recorded result. Under go run the program is a
// child of the go command, which kill -9 would leave running and holding
// the store: kill -9 the program itself (pkill -9 -x quickstart), or go
// build it and run the binary. Then look at the run with the
// CLI: go run ./cmd/skein runs show <run ID>.
package main
