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
	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// maxRetentionDays bounds SKEIN_RETENTION_DAYS (100 years).
const maxRetentionDays = 36500

// noVersion stands for "no version recorded" in SKEIN_VERSIONS.
const noVersion = "-"

// ConfigFromEnv reads the configuration template.yaml gives a function (the
// SKEIN_* variables the README lists, and Lambda's AWS_LAMBDA_LOG_LEVEL,
// AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION); getenv is
// os.Getenv when nil. It fills Kind, Resources, TimeBudgetMargin,
// Malformed and Worker's Engine (InlineConcurrency, StepLeaseTTL,
// RunLeaseTTL, MaxInterruptions, HoldRetryDelay, HoldRetryLimit, Metrics),
// Concurrency, Version, Versions and a JSON Logger on stdout (at
// AWS_LAMBDA_LOG_LEVEL, default info); the caller adds the World and the
// Registry. Every malformed variable is reported, by name. The variables
// of the engine's own settings (SKEIN_MAX_QUEUE_DELAY,
// SKEIN_VERSION_RETRY_*) are skeinlambda's to read, not a Config's.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	v := envvars.Read(getenv)
	var cfg Config
	p := envParser{}
	switch k := Kind(strings.ToLower(v.Handler)); k {
	case KindFlow, KindWebhook, KindAPI:
		cfg.Kind = k
	case "":
		p.errorf("%s is not set: want %q, %q or %q", envvars.Handler, KindFlow, KindWebhook, KindAPI)
	default:
		p.errorf("%s=%q: want %q, %q or %q", envvars.Handler, k, KindFlow, KindWebhook, KindAPI)
	}
	cfg.Resources = p.resources(v)
	eng := &cfg.Worker.Engine
	p.atoi(v.InlineConcurrency, envvars.InlineConcurrency, &eng.InlineConcurrency, 1, 1<<16)
	p.atoi(v.RecordConcurrency, envvars.RecordConcurrency, &cfg.Worker.Concurrency, 1, 1<<10)
	p.duration(v.TimeBudgetMargin, envvars.TimeBudgetMargin, &cfg.TimeBudgetMargin)
	p.duration(v.StepLeaseTTL, envvars.StepLeaseTTL, &eng.StepLeaseTTL)
	p.duration(v.RunLeaseTTL, envvars.RunLeaseTTL, &eng.RunLeaseTTL)
	p.atoi(v.MaxInterruptions, envvars.MaxInterruptions, &eng.MaxInterruptions, 1, 1<<16)
	p.duration(v.HoldRetryDelay, envvars.HoldRetryDelay, &eng.HoldRetryDelay)
	p.duration(v.HoldRetryLimit, envvars.HoldRetryLimit, &eng.HoldRetryLimit)
	switch m := strings.ToLower(v.Malformed); m {
	case "", "dead-letter", "deadletter", "dlq":
		cfg.Malformed = DeadLetter
	case "acknowledge", "ack":
		cfg.Malformed = Acknowledge
	default:
		p.errorf("%s=%q: want dead-letter or acknowledge", envvars.Malformed, m)
	}
	cfg.Worker.Version = functionVersion(v)
	if err := world.CheckVersion(cfg.Worker.Version); err != nil {
		p.errorf("%s=%q: %w", envvars.Version, cfg.Worker.Version, err)
	}
	if v.Versions != "" {
		vs, err := parseVersions(v.Versions)
		if err != nil {
			p.errorf("%s=%q: %w", envvars.Versions, v.Versions, err)
		}
		cfg.Worker.Versions = vs
	}
	cfg.Worker.Logger, eng.Metrics = p.telemetry(v)
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
	d, err := envvars.ParseDuration(name, v)
	switch {
	case err != nil:
		p.errs = append(p.errs, err)
	case d != 0:
		*dst = d
	}
}

// resources parses the stack's resources.
func (p *envParser) resources(v envvars.Vars) Resources {
	r := Resources{Table: v.Table, QueueURL: v.QueueURL, Bucket: v.Bucket, KMSKeyID: v.KMSKeyID}
	for _, c := range []struct{ name, v string }{{envvars.Table, v.Table}, {envvars.QueueURL, v.QueueURL}, {envvars.Bucket, v.Bucket}} {
		if c.v == "" {
			p.errorf("%s is not set", c.name)
		}
	}
	p.atoi(v.ClaimCheckThreshold, envvars.ClaimCheckThreshold, &r.ClaimCheckThreshold, awslimits.MinClaimCheckThreshold, awslimits.MaxClaimCheckThreshold)
	var days int
	p.atoi(v.RetentionDays, envvars.RetentionDays, &days, 0, maxRetentionDays)
	r.Retention = time.Duration(days) * 24 * time.Hour
	switch s := strings.ToLower(v.S3PathStyle); s {
	case "", "0", "false":
	case "1", "true":
		r.S3PathStyle = true
	default:
		p.errorf("%s=%q: want 1 or 0", envvars.S3PathStyle, s)
	}
	return r
}

// telemetry builds the JSON logger on stdout, at AWS_LAMBDA_LOG_LEVEL, and
// the EMF metrics when SKEIN_METRICS_NAMESPACE names a namespace.
func (p *envParser) telemetry(v envvars.Vars) (*slog.Logger, worker.Metrics) {
	level := slog.LevelInfo
	if v.LogLevel != "" {
		if err := level.UnmarshalText([]byte(v.LogLevel)); err != nil {
			p.errorf("%s=%q: want debug, info, warn or error", envvars.LogLevel, v.LogLevel)
		}
	}
	logger := lambdaio.NewJSONLogger(os.Stdout, level)
	ns := v.MetricsNamespace
	if ns == "" {
		return logger, nil
	}
	if !validNamespace(ns) {
		p.errorf("%s=%q: want 1 to 255 of letters, digits and . - _ / # : or space, not starting with AWS/", envvars.MetricsNamespace, ns)
	}
	var dims map[string]string
	if fn := v.FunctionName; fn != "" {
		dims = map[string]string{"FunctionName": fn}
	}
	return logger, lambdaio.NewEMF(os.Stdout, ns, dims)
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

// functionVersion is the code version a function records on the runs it
// starts, from its environment: SKEIN_VERSION
// when set (set it to the same value on every function and client of a
// deploy, e.g. a release name or the commit: it is what pins runs to the
// code that started them); else the VCS revision the binary was built from
// (sdk.DefaultVersion); else, for a published Lambda version, the
// function's name and version ("my-flow:7"). "$LATEST" is not a version of
// anything (its code changes with every deploy): it gives "".
func functionVersion(v envvars.Vars) string {
	if v.Version != "" {
		return v.Version
	}
	if dv := sdk.DefaultVersion(); dv != "" {
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

// parseVersions reads SKEIN_VERSIONS: versions separated by commas, noVersion
// for the runs that recorded none.
func parseVersions(s string) (worker.Versions, error) {
	var vs worker.Versions
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return nil, errors.New("an empty item (write " + noVersion + " for the runs that recorded no version)")
		case v == noVersion:
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
