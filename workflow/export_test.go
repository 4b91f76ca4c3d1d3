package workflow

import (
	"net/http"
	"time"
)

// VersionFromBuild exposes versionFromBuild to the external tests.
var VersionFromBuild = versionFromBuild

// WebhookHandlerWithBodyTimeout is Client.WebhookHandler with another body
// timeout, for tests that stall a request.
func (c *Client) WebhookHandlerWithBodyTimeout(d time.Duration) http.Handler {
	h := &webhookHandler{c: c, timeout: 30 * time.Second, bodyTimeout: d}
	h.deliver = h.commit
	return h
}

// StreamNameOf is streamName, for tests that look at the World's streams.
func StreamNameOf(namespace string) string {
	n, err := streamName(namespace)
	if err != nil {
		panic(err)
	}
	return n
}
