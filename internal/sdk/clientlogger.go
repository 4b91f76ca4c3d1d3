package sdk

import "log/slog"

// ClientLogger returns the Logger c logs to (for Skein's own packages: the
// dashboard logs its request errors there).
func ClientLogger(c *Client) *slog.Logger { return c.log }
