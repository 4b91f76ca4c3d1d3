package engine

import (
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestDivergenceRedactsWebhookTokens: a held run's divergence message (in
// logs, RunInfo and the CLI) never holds a webhook's token, which resumes
// the webhook; a chosen hook token is shown as it is.
func TestDivergenceRedactsWebhookTokens(t *testing.T) {
	t.Parallel()
	secret := "WNupY2wDFumwZs788js7Rz"
	for _, tc := range []struct {
		name    string
		got     string
		hidden  string
		visible string
	}{
		{"logged webhook", describeEvent(&world.Event{CorrelationID: "hook_1", Data: &world.HookCreated{Token: secret, IsWebhook: true}}), secret, RedactToken(secret)},
		{"asked webhook", describeOp(&op{kind: opHook, id: "hook_1", name: secret, isWebhook: true}), secret, RedactToken(secret)},
		{"chosen token", describeEvent(&world.Event{CorrelationID: "hook_2", Data: &world.HookCreated{Token: "approve/42"}}), "", `"approve/42"`},
	} {
		if tc.hidden != "" && strings.Contains(tc.got, tc.hidden) || !strings.Contains(tc.got, tc.visible) {
			t.Errorf("%s: %q", tc.name, tc.got)
		}
	}
}
