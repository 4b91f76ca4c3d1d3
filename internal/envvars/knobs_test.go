package envvars

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
)

// TestKnobs checks the variables of the engine's own settings: each sets
// its knob, SKEIN_MAX_QUEUE_DELAY up to SQS's 15 minutes, and every
// malformed one is refused by name.
func TestKnobs(t *testing.T) {
	t.Parallel()
	opts, err := Vars{MaxQueueDelay: "15m", VersionRetryDelay: "2s", VersionRetryLimit: "30s"}.Knobs()
	if err != nil {
		t.Fatal(err)
	}
	k := knobs.Apply(opts)
	if k.MaxQueueDelay != 15*time.Minute || k.VersionRetryDelay != 2*time.Second || k.VersionRetryLimit != 30*time.Second {
		t.Errorf("knobs %+v, want 15m, 2s and 30s", k.Worker)
	}
	if opts, err := (Vars{}).Knobs(); err != nil || len(opts) != 0 {
		t.Errorf("no variables: %d options, %v; want none", len(opts), err)
	}
	_, err = Vars{MaxQueueDelay: "15m1s", VersionRetryDelay: "soon", VersionRetryLimit: "-1s"}.Knobs()
	for _, want := range []string{"SKEIN_MAX_QUEUE_DELAY=15m1s: SQS delays a message by at most 15m0s",
		`SKEIN_VERSION_RETRY_DELAY="soon": not a Go duration`, `SKEIN_VERSION_RETRY_LIMIT="-1s": must be positive`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one saying %q", err, want)
		}
	}
}
