package lambdaio

import (
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// NewJSONLogger returns a logger writing JSON lines to w in the shape of
// Lambda's JSON log format ("timestamp", "level", "message"), from level
// up. The handlers add the request ID.
func NewJSONLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdacontext.ReplaceAttr}))
}
