package handler

import (
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/world"
)

// queueLag is how long msg waited in the queue past its due time: since it
// was sent (SQS's SentTimestamp), or since its NotBefore for a delayed
// message. ok is false when SQS gave no timestamp.
func queueLag(msg events.SQSMessage, m world.Message, now time.Time) (lag time.Duration, ok bool) {
	ms, err := strconv.ParseInt(msg.Attributes["SentTimestamp"], 10, 64)
	if err != nil {
		return 0, false
	}
	due := time.UnixMilli(ms)
	if m.NotBefore.After(due) {
		due = m.NotBefore
	}
	return max(now.Sub(due), 0), true
}

// flushMetrics flushes m after an invocation, if it can be flushed.
func flushMetrics(m any, now time.Time, requestID string) error {
	switch f := m.(type) {
	case *lambdaio.EMF:
		return f.FlushFor(now, requestID)
	case interface{ Flush(time.Time) error }:
		return f.Flush(now)
	}
	return nil
}
