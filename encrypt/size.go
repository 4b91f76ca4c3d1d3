package encrypt

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// maxWrappedKey bounds a wrapped data key's size (an AWS KMS ciphertext
// blob of a 32-byte key is under 200 bytes; a local one 60).
const maxWrappedKey = 256

// sizedLike returns events whose payloads are as long as they will be once
// sealed, for sizing a commit without drawing keys or sealing anything.
func sizedLike(events []world.EventInput) []world.EventInput {
	out := make([]world.EventInput, len(events))
	for i, ev := range events {
		out[i] = ev
		if at, p, ok := payloadOf(ev.CorrelationID, ev.Data); ok {
			out[i].Data = withPayload(ev.Data, standIn(len(p), withKey(at)))
			if d, ok := out[i].Data.(*world.RunCreated); ok {
				d.ExecutionContext = sealmark.Mark(d.ExecutionContext)
			}
		}
	}
	return out
}

// standIn is an envelope as long as the sealing of n bytes.
func standIn(n int, withKey bool) json.RawMessage {
	const nonce, tag = 12, 16
	env := map[string]any{sealedTag: envelopeV2, "kid": strings.Repeat("k", 128), "ct": base64.StdEncoding.EncodeToString(make([]byte, nonce+n+tag))}
	if withKey {
		env["dk"] = base64.StdEncoding.EncodeToString(make([]byte, maxWrappedKey))
	}
	b, _ := json.Marshal(env)
	return b
}
