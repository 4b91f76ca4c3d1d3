package schedmsg

import "time"

// Key returns the idempotency key of a schedule's firing:
// "schedule:<name>:<time>", the scheduled time in UTC as RFC 3339. Every
// firing of the same schedule at the same time, by however many workers or
// deliveries, starts the run with this key, so it starts one run.
func Key(name string, scheduled time.Time) string {
	return "schedule:" + name + ":" + scheduled.UTC().Format(time.RFC3339)
}
