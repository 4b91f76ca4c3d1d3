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
	return &webhookHandler{c: c, timeout: 30 * time.Second, bodyTimeout: d}
}
