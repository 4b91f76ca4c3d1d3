package skeintest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// ErrNoTokens matches a *NoTokensError.
var ErrNoTokens = errors.New("skeintest: history exported without tokens")

// NoTokensError reports a run whose history was exported without its
// secrets (`skein runs events` without -show-tokens): its run_created has
// no secret, or a webhook's token is redacted. The tokens of the hooks it
// generates and of its child runs derive from that secret, so the replay
// derives other tokens than the log holds and cannot check them: at Seq,
// the code asks for the hook the log records there, with another token.
// That is not a divergence of the code; export the run again with its
// secrets.
type NoTokensError struct {
	RunID        string
	WorkflowName string
	// Seq is the hook_created event whose token could not be checked.
	Seq int64
	// Divergence is what the replay reported there (the message of the
	// ReplayReport's Divergence).
	Divergence string
}

func (e *NoTokensError) Error() string {
	return fmt.Sprintf("run %s (%s) was exported without tokens (%s): generated hook tokens and child runs cannot be checked "+
		"(at event %d the replay derives another token than the log holds); export it with `skein runs export` "+
		"or `skein runs events -show-tokens`", e.RunID, e.WorkflowName, redactedWhat(e.Divergence), e.Seq)
}

// Is makes a NoTokensError match ErrNoTokens.
func (e *NoTokensError) Is(target error) bool { return target == ErrNoTokens }

// redactedWhat says what the history lacks, from the divergence's message:
// a redacted webhook token is shown as "sha256:" and 12 hex digits where
// the log's hook is described.
func redactedWhat(divergence string) string {
	if strings.Contains(divergence, `"sha256:`) {
		return "its webhook tokens are redacted"
	}
	return "its run_created has no secret"
}

// noTokens returns a *NoTokensError when rep diverges where a history
// without its secrets cannot tell: the run's secret is missing (or a
// webhook token redacted), and at a hook_created the code asks for the same
// hook (its correlation ID) with another token. Any other divergence is the
// code's.
func noTokens(events []world.Event, rep *sdk.ReplayReport) error {
	d := rep.Divergence
	if d == nil || d.EventType != string(world.EventHookCreated) || !strings.Contains(d.Asked, "("+d.CorrelationID+")") {
		return nil
	}
	if !lacksSecrets(events, d.Seq) {
		return nil
	}
	return &NoTokensError{RunID: rep.RunID, WorkflowName: rep.WorkflowName, Seq: d.Seq, Divergence: d.Message}
}

// lacksSecrets reports whether a run's log was exported without its
// secrets: its run_created has none, or the hook_created at seq holds a
// redacted webhook token.
func lacksSecrets(events []world.Event, seq int64) bool {
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *world.RunCreated:
			if len(d.Secret) == 0 {
				return true
			}
		case *world.HookCreated:
			if ev.Seq == seq && d.IsWebhook && looksRedacted(d.Token) {
				return true
			}
		}
	}
	return false
}

// looksRedacted reports whether token is what internal/redact.Token shows
// instead of a token: "sha256:" and 12 hex digits.
func looksRedacted(token string) bool {
	hex, ok := strings.CutPrefix(token, "sha256:")
	return ok && len(hex) == 12 && strings.Trim(hex, "0123456789abcdef") == ""
}
