package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"strings"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var runsRerunCmd = &command{
	group: "runs", name: "rerun", usage: "<run-id> [-idempotency-key key] [-version v]", nargs: 1,
	writes:  true,
	summary: "start a new run with a finished run's workflow and input",
	help: `
Starts a new run of a finished (failed, cancelled or completed) run's
workflow with the same input and attributes, and prints its ID. The old
run stays as it is. The new run runs when a worker next runs on the store
(on a deployed stack, the flow function picks it up). With
-idempotency-key, a key that already names a run starts nothing: running
the command again with the same key prints "run ... already exists" and
exits 0 when that run has the same workflow and input (the first rerun),
and exits 1 naming the run when it is another run (the key is taken). The
new run records the old run's code version, so that the deployment pinned
to it runs it; -version records another (- for none).

Examples:
  skein runs rerun wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein -stack orders runs rerun wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -idempotency-key rerun-1001`,
	setup: func(fs *flag.FlagSet) runFunc {
		key := fs.String("idempotency-key", "", "start at most one run with this `key`")
		version := fs.String("version", "", "record the code version `v` (default: the old run's; - for none)")
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			if !r.Status.Terminal() {
				return fmt.Errorf("run %s is %s, not finished: wait for it, or cancel it first (skein runs cancel)", r.RunID, r.Status)
			}
			if err := e.stillSealed(r, "rerun it"); err != nil {
				return err
			}
			v := r.Version
			switch *version {
			case "":
			case noVersion:
				v = ""
			default:
				v = *version
			}
			var existed bool
			// The new run is not a schedule's firing: the SDK's own
			// attributes (sdk.ReservedPrefix) stay behind.
			attrs := maps.Clone(r.Attributes)
			maps.DeleteFunc(attrs, func(k, _ string) bool { return strings.HasPrefix(k, sdk.ReservedPrefix) })
			opts := []client.StartOption{client.WithAttributes(attrs), client.WithVersion(v), client.ReportExisting(&existed)}
			if *key != "" {
				opts = append(opts, client.WithIdempotencyKey(*key))
			}
			var input any
			if len(r.Input) > 0 {
				input = r.Input
			}
			id, err := e.client.Start(ctx, r.WorkflowName, input, opts...)
			if ce := (*client.RequestError)(nil); errors.As(err, &ce) && ce.Kind == world.ErrConflict && ce.InputDiffers {
				return rerunExisted(ctx, e, r, *key, ce.RunID)
			}
			if err != nil {
				return err
			}
			if existed {
				return rerunExisted(ctx, e, r, *key, id)
			}
			fmt.Fprintf(e.stdout, "started run %s (%s, the input of %s); it runs when a worker next runs on %s%s\n", id, r.WorkflowName, r.RunID, e.where(), e.sealsNote())
			return nil
		}
	},
}

// rerunExisted reports a rerun whose idempotency key already named run id:
// the earlier rerun of the same run (same workflow and input) is fine, any
// other run means the key is taken.
func rerunExisted(ctx context.Context, e *env, r *world.Run, key, id string) error {
	other, err := e.getRun(ctx, id)
	if err != nil {
		return err
	}
	if other.WorkflowName == r.WorkflowName && bytes.Equal(other.Input, r.Input) {
		fmt.Fprintf(e.stdout, "run %s already exists for idempotency key %q (a rerun of the same input); no run was started\n", id, key)
		return nil
	}
	return fmt.Errorf("idempotency key %q already names run %s, whose input is not that of %s: no run was started (choose another key)", key, id, r.RunID)
}
