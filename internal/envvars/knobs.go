package envvars

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/internal/awslimits"
	"github.com/skeinflow/skein/internal/knobs"
)

// ParseDuration parses v, the value of the variable name, as a positive Go
// duration; "" is 0 and no error. The error names the variable.
func ParseDuration(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s=%q: not a Go duration (such as 10s or 1m30s)", name, v)
	case d <= 0:
		return 0, fmt.Errorf("%s=%q: must be positive", name, v)
	}
	return d, nil
}

// Knobs parses the variables whose settings are no Config's field but the
// engine's own (SKEIN_MAX_QUEUE_DELAY, SKEIN_VERSION_RETRY_DELAY,
// SKEIN_VERSION_RETRY_LIMIT) into the knob options skeinlambda passes to
// the handler's constructor; the error names every malformed one.
func (v Vars) Knobs() ([]knobs.Option, error) {
	var errs []error
	parse := func(val, name string) time.Duration {
		d, err := ParseDuration(name, val)
		if err != nil {
			errs = append(errs, err)
		}
		return d
	}
	maxDelay := parse(v.MaxQueueDelay, MaxQueueDelay)
	if maxDelay > awslimits.MaxQueueDelay {
		errs = append(errs, fmt.Errorf("%s=%s: SQS delays a message by at most %s", MaxQueueDelay, maxDelay, awslimits.MaxQueueDelay))
	}
	delay, limit := parse(v.VersionRetryDelay, VersionRetryDelay), parse(v.VersionRetryLimit, VersionRetryLimit)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var opts []knobs.Option
	if maxDelay > 0 {
		opts = append(opts, knobs.WithMaxQueueDelay(maxDelay))
	}
	if delay > 0 || limit > 0 {
		opts = append(opts, knobs.WithVersionRetry(delay, limit))
	}
	return opts, nil
}
