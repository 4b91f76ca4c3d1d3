package handler

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skeinflow/skein/internal/awslimits"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// maxRetentionDays bounds SKEIN_RETENTION_DAYS (100 years).
const maxRetentionDays = 36500

// Environment variables ConfigFromEnv reads. The first nine are the ones
// template.yaml sets; the others are optional tuning, mostly for tests.
const (
	EnvHandler             = envvars.Handler             // flow | webhook | api
	EnvTable               = envvars.Table               // DynamoDB table
	EnvQueueURL            = envvars.QueueURL            // SQS queue URL
	EnvBucket              = envvars.Bucket              // S3 bucket
	EnvInlineConcurrency   = envvars.InlineConcurrency   // steps run as goroutines per invocation
	EnvTimeBudgetMargin    = envvars.TimeBudgetMargin    // Go duration kept free before the deadline
	EnvClaimCheckThreshold = envvars.ClaimCheckThreshold // bytes
	EnvRetentionDays       = envvars.RetentionDays       // days a finished run is kept (0: forever)
	EnvS3PathStyle         = envvars.S3PathStyle         // 1: path-style S3 addressing (emulators)
	EnvStepLeaseTTL        = envvars.StepLeaseTTL        // Go duration: a step attempt's lease
	EnvRunLeaseTTL         = envvars.RunLeaseTTL         // Go duration: a continuation's run lease
	EnvMaxQueueDelay       = envvars.MaxQueueDelay       // Go duration: longest delay of one message (hops beyond)
	EnvMaxInterruptions    = envvars.MaxInterruptions    // lost executors a step attempt survives
	EnvHoldRetryDelay      = envvars.HoldRetryDelay      // Go duration: a held run's first retry
	EnvHoldRetryLimit      = envvars.HoldRetryLimit      // Go duration: the longest wait between retries
	EnvConcurrency         = envvars.RecordConcurrency   // records of a batch handled at once
	EnvMalformed           = envvars.Malformed           // dead-letter (default) | acknowledge
	EnvLogLevel            = envvars.LogLevel            // debug | info | warn | error (Lambda's own)
	EnvMetricsNamespace    = envvars.MetricsNamespace    // CloudWatch namespace of the EMF metrics (empty: none)
	EnvKMSKeyID            = envvars.KMSKeyID            // KMS key sealing the runs' payloads (empty: in clear)
	EnvVersion             = envvars.Version             // the code version recorded on the runs started here
	EnvVersions            = envvars.Versions            // comma-separated versions the flow function runs (- : none recorded)
	EnvVersionRetryDelay   = envvars.VersionRetryDelay   // Go duration: first delay of a message left for another version
	EnvVersionRetryLimit   = envvars.VersionRetryLimit   // Go duration: the longest such delay
	EnvFunctionVersion     = envvars.FunctionVersion     // Lambda's own: "$LATEST" or a published version
	EnvFunctionName        = envvars.FunctionName        // Lambda's own
)

// NoVersion stands for "no version recorded" in SKEIN_VERSIONS.
const NoVersion = "-"

// ConfigFromEnv reads the configuration template.yaml gives a function (see
// the Env constants); getenv is os.Getenv when nil. It fills Kind,
// Resources, Engine (InlineConcurrency, StepLeaseTTL, RunLeaseTTL,
// MaxQueueDelay), TimeBudgetMargin, Concurrency, Malformed and a JSON Logger
// on stdout (at AWS_LAMBDA_LOG_LEVEL, default info); the caller adds the
// World and the Registry. Every malformed variable is reported, by name.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	v := envvars.Read(getenv)
	var cfg Config
	p := envParser{}
	switch k := Kind(strings.ToLower(v.Handler)); k {
	case KindFlow, KindWebhook, KindAPI:
		cfg.Kind = k
	case "":
		p.errorf("%s is not set: want %q, %q or %q", EnvHandler, KindFlow, KindWebhook, KindAPI)
	default:
		p.errorf("%s=%q: want %q, %q or %q", EnvHandler, k, KindFlow, KindWebhook, KindAPI)
	}
	cfg.Resources = p.resources(v)
	p.atoi(v.InlineConcurrency, EnvInlineConcurrency, &cfg.Engine.InlineConcurrency, 1, 1<<16)
	p.atoi(v.RecordConcurrency, EnvConcurrency, &cfg.Concurrency, 1, 1<<10)
	p.duration(v.TimeBudgetMargin, EnvTimeBudgetMargin, &cfg.TimeBudgetMargin)
	p.duration(v.StepLeaseTTL, EnvStepLeaseTTL, &cfg.Engine.StepLeaseTTL)
	p.duration(v.RunLeaseTTL, EnvRunLeaseTTL, &cfg.Engine.RunLeaseTTL)
	p.duration(v.MaxQueueDelay, EnvMaxQueueDelay, &cfg.Engine.MaxQueueDelay)
	p.atoi(v.MaxInterruptions, EnvMaxInterruptions, &cfg.Engine.MaxInterruptions, 1, 1<<16)
	p.duration(v.HoldRetryDelay, EnvHoldRetryDelay, &cfg.Engine.HoldRetryDelay)
	p.duration(v.HoldRetryLimit, EnvHoldRetryLimit, &cfg.Engine.HoldRetryLimit)
	p.duration(v.VersionRetryDelay, EnvVersionRetryDelay, &cfg.Engine.VersionRetryDelay)
	p.duration(v.VersionRetryLimit, EnvVersionRetryLimit, &cfg.Engine.VersionRetryLimit)
	if cfg.Engine.MaxQueueDelay > awslimits.MaxQueueDelay {
		p.errorf("%s=%s: SQS delays a message by at most %s", EnvMaxQueueDelay, cfg.Engine.MaxQueueDelay, awslimits.MaxQueueDelay)
	}
	switch m := strings.ToLower(v.Malformed); m {
	case "", "dead-letter", "deadletter", "dlq":
		cfg.Malformed = DeadLetter
	case "acknowledge", "ack":
		cfg.Malformed = Acknowledge
	default:
		p.errorf("%s=%q: want dead-letter or acknowledge", EnvMalformed, m)
	}
	cfg.Version = functionVersion(v)
	if err := world.CheckVersion(cfg.Version); err != nil {
		p.errorf("%s=%q: %w", EnvVersion, cfg.Version, err)
	}
	if v.Versions != "" {
		vs, err := parseVersions(v.Versions)
		if err != nil {
			p.errorf("%s=%q: %w", EnvVersions, v.Versions, err)
		}
		cfg.Versions = vs
	}
	cfg.Logger, cfg.Metrics = p.telemetry(v)
	if err := errors.Join(p.errs...); err != nil {
		return cfg, fmt.Errorf("handler: environment: %w", err)
	}
	return cfg, nil
}

// envParser parses the environment's values, gathering every error.
type envParser struct{ errs []error }

func (p *envParser) errorf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// atoi parses v, the integer value of the variable name, into *dst, unless v is
// empty; it must lie in [lo, hi].
func (p *envParser) atoi(v, name string, dst *int, lo, hi int) {
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		p.errorf("%s=%q: not an integer", name, v)
	case n < lo || n > hi:
		p.errorf("%s=%d: want %d to %d", name, n, lo, hi)
	default:
		*dst = n
	}
}

// duration parses v, the positive Go duration of the variable name, into *dst,
// unless v is empty.
func (p *envParser) duration(v, name string, dst *time.Duration) {
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		p.errorf("%s=%q: not a Go duration (such as 10s or 1m30s)", name, v)
	case d <= 0:
		p.errorf("%s=%q: must be positive", name, v)
	default:
		*dst = d
	}
}

// resources parses the stack's resources.
func (p *envParser) resources(v envvars.Vars) Resources {
	r := Resources{Table: v.Table, QueueURL: v.QueueURL, Bucket: v.Bucket, KMSKeyID: v.KMSKeyID}
	for _, c := range []struct{ name, v string }{{EnvTable, v.Table}, {EnvQueueURL, v.QueueURL}, {EnvBucket, v.Bucket}} {
		if c.v == "" {
			p.errorf("%s is not set", c.name)
		}
	}
	p.atoi(v.ClaimCheckThreshold, EnvClaimCheckThreshold, &r.ClaimCheckThreshold, awslimits.MinClaimCheckThreshold, awslimits.MaxClaimCheckThreshold)
	var days int
	p.atoi(v.RetentionDays, EnvRetentionDays, &days, 0, maxRetentionDays)
	r.Retention = time.Duration(days) * 24 * time.Hour
	switch s := strings.ToLower(v.S3PathStyle); s {
	case "", "0", "false":
	case "1", "true":
		r.S3PathStyle = true
	default:
		p.errorf("%s=%q: want 1 or 0", EnvS3PathStyle, s)
	}
	return r
}

// telemetry builds the JSON logger on stdout, at AWS_LAMBDA_LOG_LEVEL, and
// the EMF metrics when SKEIN_METRICS_NAMESPACE names a namespace.
func (p *envParser) telemetry(v envvars.Vars) (*slog.Logger, workflow.Metrics) {
	level := slog.LevelInfo
	if v.LogLevel != "" {
		if err := level.UnmarshalText([]byte(v.LogLevel)); err != nil {
			p.errorf("%s=%q: want debug, info, warn or error", EnvLogLevel, v.LogLevel)
		}
	}
	logger := NewJSONLogger(os.Stdout, level)
	ns := v.MetricsNamespace
	if ns == "" {
		return logger, nil
	}
	if !validNamespace(ns) {
		p.errorf("%s=%q: want 1 to 255 of letters, digits and . - _ / # : or space, not starting with AWS/", EnvMetricsNamespace, ns)
	}
	var dims map[string]string
	if fn := v.FunctionName; fn != "" {
		dims = map[string]string{"FunctionName": fn}
	}
	return logger, NewEMF(os.Stdout, ns, dims)
}

// validNamespace reports whether ns is a CloudWatch namespace a user may
// publish to.
func validNamespace(ns string) bool {
	if len(ns) == 0 || len(ns) > 255 || strings.HasPrefix(ns, "AWS/") {
		return false
	}
	for _, c := range ns {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_/#: ", c)
		if !ok {
			return false
		}
	}
	return true
}

// FunctionVersion is the code version a function records on the runs it
// starts, from its environment (getenv; os.Getenv when nil): SKEIN_VERSION
// when set (set it to the same value on every function and client of a
// deploy, e.g. a release name or the commit: it is what pins runs to the
// code that started them); else the VCS revision the binary was built from
// (workflow.DefaultVersion); else, for a published Lambda version, the
// function's name and version ("my-flow:7"). "$LATEST" is not a version of
// anything (its code changes with every deploy): it gives "".
func FunctionVersion(getenv func(string) string) string {
	return functionVersion(envvars.Read(getenv))
}

// functionVersion is FunctionVersion on the environment's values.
func functionVersion(v envvars.Vars) string {
	if v.Version != "" {
		return v.Version
	}
	if dv := workflow.DefaultVersion(); dv != "" {
		return dv
	}
	fv := v.FunctionVersion
	if fv == "" || fv == "$LATEST" {
		return ""
	}
	if v.FunctionName != "" {
		return v.FunctionName + ":" + fv
	}
	return fv
}

// parseVersions reads SKEIN_VERSIONS: versions separated by commas, NoVersion
// for the runs that recorded none.
func parseVersions(s string) (workflow.Versions, error) {
	var vs workflow.Versions
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return nil, errors.New("an empty item (write " + NoVersion + " for the runs that recorded no version)")
		case v == NoVersion:
			v = ""
		default:
			if err := world.CheckVersion(v); err != nil {
				return nil, err
			}
		}
		vs = append(vs, v)
	}
	return vs, nil
}
