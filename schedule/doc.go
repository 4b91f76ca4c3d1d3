// Package schedule parses schedule expressions and computes their firing
// times.
//
// # Expressions
//
// A cron expression has five fields, separated by spaces:
//
//	minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or JAN-DEC) day-of-week (0-7 or SUN-SAT; 0 and 7 are Sunday)
//
// Each field is "*", a value, a range "a-b", or a list of these separated
// by commas; "*", a range or a value may be followed by "/n" to take every
// n-th value ("*/15", "10-50/20", "5/10": 5, 15, ... 55). "?" is "*" in the
// day fields. When both day fields are restricted a day matching either
// fires, as in cron ("0 0 1 * MON": the 1st and every Monday). The
// shorthands @yearly (or @annually), @monthly, @weekly, @daily (or
// @midnight) and @hourly stand for the usual expressions. A cron
// expression's times are wall-clock times in a time zone (see Expr.Next on
// daylight-saving changes).
//
// EventBridge's six-field form, "cron(minute hour day-of-month month
// day-of-week year)", is accepted too and fires at the times EventBridge
// would: day-of-week counts from 1 (Sunday) to 7 (Saturday), one day field
// must be "?", and the year field (1970-2199) restricts the years.
// EventBridge's L, W and # are refused.
//
// A fixed rate is "@every <duration>" with a Go duration of whole seconds,
// at least 1s ("@every 5m", "@every 1h30m"), or "rate(<n> <unit>)" as
// EventBridge Scheduler writes it, with unit minute(s), hour(s) or day(s)
// ("rate(1 hour)", "rate(5 minutes)"). A fixed rate fires at the multiples
// of its interval since the Unix epoch, so that every worker computes the
// same firing times.
//
// Parse returns a *ParseError naming the expression, the field and what is
// wrong.
//
// # Firings and idempotency
//
// Each firing starts one run, whose idempotency key is made of the
// schedule's name and the scheduled time, "schedule:<name>:<time>" with the
// time in UTC as RFC 3339: a schedule fired twice for the same time, by two
// workers or by a message delivered twice, starts one run.
//
// # Schedule messages
//
// On AWS, an EventBridge Scheduler schedule sends a schedule message to the
// work queue, a JSON object with one top-level field:
//
//	{"skeinSchedule": {
//	  "scheduleArn": "<aws.scheduler.schedule-arn>",
//	  "scheduledTime": "<aws.scheduler.scheduled-time>",
//	  "workflow": "report",
//	  "input": {"day": "today"}
//	}}
//
// EventBridge Scheduler fills in the two placeholders when it sends the
// message; the schedule's name is "name" when set, otherwise the last part
// of the ARN (group/name for a schedule outside the default group). The
// flow function recognises such a message and starts the run with the
// firing's key; one it cannot act on goes to the dead-letter queue.
package schedule
