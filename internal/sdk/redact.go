package sdk

import (
	"strings"

	"github.com/skeinflow/skein/internal/engine"
)

// redactTokenIn returns s with every occurrence of token replaced by
// engine.RedactToken(token), for logged error messages about a hook.
func redactTokenIn(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, engine.RedactToken(token))
}
