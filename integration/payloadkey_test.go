package integration

// This file has no build tag: it needs no emulator.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/lambdaemu"
)

// TestTemplatePayloadEncryption: PayloadEncryption gives every function the
// KMS key (SKEIN_KMS_KEY_ID) and its role the use of that key only, under
// Skein's encryption context (the webhook only Decrypt); off gives neither.
func TestTemplatePayloadEncryption(t *testing.T) {
	t.Parallel()
	tpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const ownID = "1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tc := range []struct {
		mode, keyID, wantKey string
	}{
		{"off", "", ""},
		{"stack-key", "", "arn:aws:kms:us-east-1:000000000000:key/stack"},
		{"own-key", ownID, "arn:aws:kms:us-east-1:000000000000:key/" + ownID},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			opts := &lambdaemu.ResolveOptions{
				Parameters: map[string]string{"PayloadEncryption": tc.mode, "PayloadKmsKeyId": tc.keyID},
				Attributes: map[string]string{"PayloadKey.Arn": "arn:aws:kms:us-east-1:000000000000:key/stack"},
			}
			for fn, actions := range map[string]string{
				"FlowFunction": "[kms:GenerateDataKey kms:Decrypt]", "WebhookFunction": "[kms:Decrypt]", "ApiFunction": "[kms:GenerateDataKey kms:Decrypt]",
			} {
				cfg, err := handler.ConfigFromEnv(functionEnv(t, tpl, fn, opts))
				if err != nil {
					t.Fatalf("%s: %v", fn, err)
				}
				if cfg.Resources.KMSKeyID != tc.wantKey {
					t.Errorf("%s: SKEIN_KMS_KEY_ID = %q, want %q", fn, cfg.Resources.KMSKeyID, tc.wantKey)
				}
				role := strings.Replace(fn, "Function", "FunctionRole", 1)
				_, props, err := tpl.Resource(role, opts)
				if err != nil {
					t.Fatal(err)
				}
				var found []string
				for _, p := range props["Policies"].([]any) {
					doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
					for _, st := range doc["Statement"].([]any) {
						m := st.(map[string]any)
						if m["Sid"] == "PayloadKey" {
							found = append(found, fmt.Sprint(m["Action"], " ", m["Resource"], " ", m["Condition"]))
						}
					}
				}
				switch {
				case tc.wantKey == "" && len(found) != 0:
					t.Errorf("%s: with encryption off the role may use a key: %v", role, found)
				case tc.wantKey != "" && (len(found) != 1 || !strings.Contains(found[0], actions+" "+tc.wantKey+" ") || !strings.Contains(found[0], "run-data-key")):
					t.Errorf("%s: PayloadKey statements %v; want %s on %s under the encryption context", role, found, actions, tc.wantKey)
				}
			}
		})
	}
}
