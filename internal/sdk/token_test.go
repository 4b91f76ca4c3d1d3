package sdk_test

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// forgeTokens computes the tokens anyone who knows only a run ID could: a
// generator seeded by a hash of the run ID, read size bytes per token and
// mapped onto the token alphabet.
func forgeTokens(runID string, n, size int) []string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
	g := rand.NewChaCha8(sha256.Sum256([]byte("skein/tokens/" + runID)))
	out := make([]string, n)
	for i := range out {
		raw := make([]byte, size)
		_, _ = g.Read(raw)
		for j, c := range raw {
			raw[j] = alphabet[c&63]
		}
		out[i] = string(raw)
	}
	return out
}

// tokenWorkflow creates a webhook, a hook with a generated token and a
// child run (whose parent waits on a notification hook), and returns the
// generated tokens.
var tokenWorkflow = sdk.New("tokens", func(ctx sdk.Context, _ struct{}) ([]string, error) {
	wh := sdk.NewWebhook(ctx, sdk.WebhookOptions{})
	h := sdk.NewHook[int](ctx, sdk.HookOptions{})
	if _, err := doubler.Call(ctx, 1); err != nil {
		return nil, err
	}
	return []string{wh.Token(), h.Token()}, nil
})

// hookTokens returns the tokens of a run's hook_created events.
func hookTokens(evs []world.Event) []string {
	var out []string
	for _, ev := range evs {
		if d, ok := ev.Data.(*world.HookCreated); ok {
			out = append(out, d.Token)
		}
	}
	return out
}

func TestGeneratedTokensNotFromRunID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tokenWorkflow, doubler)
	ctx := e.ctx()
	run, err := tokenWorkflow.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := e.events(run.ID())
	created := evs[0].Data.(*world.RunCreated)
	if len(created.Secret) != engine.RunSecretSize {
		t.Errorf("run_created secret: %d bytes, want %d", len(created.Secret), engine.RunSecretSize)
	}
	forged := append(forgeTokens(run.ID(), 4, 21), forgeTokens(run.ID(), 4, engine.TokenLength)...)
	for _, tok := range got {
		if len(tok) != engine.TokenLength {
			t.Errorf("token %q: %d characters, want %d (132 bits)", tok, len(tok), engine.TokenLength)
		}
		for _, f := range forged {
			if strings.HasPrefix(tok, f[:8]) || strings.HasPrefix(f, tok[:8]) {
				t.Errorf("token %q recomputed from the run ID alone", tok)
			}
		}
	}
	public := fmt.Sprintf("skein-child:%s:1", run.ID())
	var child string
	for _, tok := range hookTokens(evs) {
		if strings.HasPrefix(tok, "skein-child:") {
			child = tok
		} else if !slices.Contains(got, tok) {
			t.Errorf("hook token %q is not one the workflow generated", tok)
		}
	}
	if child == "" || child == public || len(child) < len(public)+1+engine.TokenLength {
		t.Errorf("child notification token %q: want %q and a secret tag", child, public)
	}
}

// TestLegacyRunTokens: a run whose run_created has no secret (created before
// run secrets) keeps the tokens it drew then, so that it replays as it ran.
func TestLegacyRunTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tokenWorkflow, doubler)
	ctx := e.ctx()
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	if _, err := e.lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: tokenWorkflow.Name()}}}}); err != nil {
		t.Fatal(err)
	}
	if err := engine.Wake(ctx, e.lw, time.Now, runID, ""); err != nil {
		t.Fatal(err)
	}
	got, err := tokenWorkflow.Get(e.client, runID).Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := forgeTokens(runID, 2, 21); !slices.Equal(got, want) {
		t.Errorf("legacy run's tokens %q, want %q", got, want)
	}
	if !slices.Contains(hookTokens(e.events(runID)), fmt.Sprintf("skein-child:%s:1", runID)) {
		t.Errorf("legacy run's child token changed: %q", hookTokens(e.events(runID)))
	}
}
