package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// Receipt is what the order's cleanup hook archives once its run has
// completed: the result, and the shipment the last step recorded (the
// state before the run's completion).
type Receipt struct {
	RunID       string    `json:"runId"`
	Result      Result    `json:"result"`
	Tracking    string    `json:"tracking"`
	CompletedAt time.Time `json:"completedAt"`
}

// receiptPath is where the receipt of an order is archived, "" when the
// order asks for none.
func receiptPath(o Order) string {
	if o.ReceiptDir == "" {
		return ""
	}
	return filepath.Join(o.ReceiptDir, o.ID+".json")
}

// archiveReceipt is fulfilOrder's cleanup hook. It runs once the run has
// completed (never for a rejected or failed order) and before Result
// returns, so the receipt is on disk by the time the shop reports the order
// shipped. It may run twice if the process dies before its outcome is
// recorded: writing the same file again is harmless.
func archiveReceipt(ctx context.Context, c *workflow.Cleanup[Order, Result]) error {
	path := receiptPath(c.Input)
	if path == "" {
		return nil
	}
	r := Receipt{RunID: c.RunID, Result: c.Result, CompletedAt: c.CompletedAt}
	if err := c.DecodePrevious(&r.Tracking); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("archive receipt: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("archive receipt: %w", err)
	}
	return os.Rename(tmp, path)
}
