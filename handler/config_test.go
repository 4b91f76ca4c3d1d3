package handler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// templateEnv is what template.yaml sets on the flow function.
func templateEnv() map[string]string {
	return map[string]string{
		"SKEIN_HANDLER": "flow", "SKEIN_TABLE": "skein-EventTable-1", "SKEIN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q",
		"SKEIN_BUCKET": "skein-bucket", "SKEIN_INLINE_CONCURRENCY": "16", "SKEIN_TIME_BUDGET_MARGIN": "10s",
		"SKEIN_CLAIM_CHECK_THRESHOLD": "65536", "SKEIN_RETENTION_DAYS": "30",
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := templateEnv()
	env["SKEIN_STEP_LEASE_TTL"] = "3s"
	env["SKEIN_RUN_LEASE_TTL"] = "4s"
	env["SKEIN_MALFORMED"] = "acknowledge"
	env["SKEIN_S3_PATH_STYLE"] = "1"
	env["SKEIN_MAX_INTERRUPTIONS"] = "7"
	env["SKEIN_HOLD_RETRY_DELAY"] = "30s"
	env["SKEIN_HOLD_RETRY_LIMIT"] = "2h"
	env["SKEIN_METRICS_NAMESPACE"] = "Skein/orders"
	cfg, err := handler.ConfigFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	want := handler.Resources{Table: "skein-EventTable-1", QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", Bucket: "skein-bucket",
		ClaimCheckThreshold: 65536, S3PathStyle: true, Retention: 30 * 24 * time.Hour}
	eng := cfg.Worker.Engine
	if cfg.Kind != handler.KindFlow || cfg.Resources != want || eng.InlineConcurrency != 16 ||
		cfg.TimeBudgetMargin != 10*time.Second || eng.StepLeaseTTL != 3*time.Second ||
		eng.RunLeaseTTL != 4*time.Second || cfg.Malformed != handler.Acknowledge || cfg.Worker.Logger == nil ||
		eng.MaxInterruptions != 7 || eng.HoldRetryDelay != 30*time.Second || eng.HoldRetryLimit != 2*time.Hour ||
		eng.Metrics == nil {
		t.Errorf("config %+v", cfg)
	}

	// The webhook function's environment has no inline concurrency or margin.
	env = templateEnv()
	env["SKEIN_HANDLER"] = "webhook"
	delete(env, "SKEIN_INLINE_CONCURRENCY")
	delete(env, "SKEIN_TIME_BUDGET_MARGIN")
	if cfg, err = handler.ConfigFromEnv(envOf(env)); err != nil || cfg.Kind != handler.KindWebhook {
		t.Errorf("webhook: %v %v", cfg.Kind, err)
	}
	if cfg.Worker.Engine.Metrics != nil {
		t.Errorf("metrics without SKEIN_METRICS_NAMESPACE: %T", cfg.Worker.Engine.Metrics)
	}
	env["SKEIN_HANDLER"] = "api"
	if cfg, err = handler.ConfigFromEnv(envOf(env)); err != nil || cfg.Kind != handler.KindAPI {
		t.Errorf("api: %v %v", cfg.Kind, err)
	}
}

func TestConfigFromEnvErrors(t *testing.T) {
	t.Parallel()
	_, err := handler.ConfigFromEnv(envOf(map[string]string{
		"SKEIN_HANDLER": "both", "SKEIN_INLINE_CONCURRENCY": "many", "SKEIN_TIME_BUDGET_MARGIN": "10",
		"SKEIN_CLAIM_CHECK_THRESHOLD": "12", "SKEIN_MALFORMED": "shrug", "AWS_LAMBDA_LOG_LEVEL": "loud",
		"SKEIN_RETENTION_DAYS": "-1", "SKEIN_MAX_INTERRUPTIONS": "0", "SKEIN_HOLD_RETRY_DELAY": "soon",
		"SKEIN_METRICS_NAMESPACE": "AWS/Lambda",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"SKEIN_HANDLER", "SKEIN_TABLE", "SKEIN_QUEUE_URL", "SKEIN_BUCKET", "SKEIN_INLINE_CONCURRENCY",
		"SKEIN_TIME_BUDGET_MARGIN", "SKEIN_CLAIM_CHECK_THRESHOLD", "SKEIN_MALFORMED", "AWS_LAMBDA_LOG_LEVEL", "SKEIN_RETENTION_DAYS",
		"SKEIN_MAX_INTERRUPTIONS", "SKEIN_HOLD_RETRY_DELAY", "SKEIN_METRICS_NAMESPACE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	reg := workflow.NewRegistry()
	for name, tc := range map[string]struct {
		cfg  handler.Config
		want string
	}{
		"no world":      {handler.Config{Worker: worker.Config{Registry: reg}}, "no Worker.World"},
		"no registry":   {handler.Config{Worker: worker.Config{World: w}}, "no Worker.Registry"},
		"margins":       {handler.Config{TimeBudgetMargin: 400 * time.Millisecond, Worker: worker.Config{World: w, Registry: reg}}, "TimeBudgetMargin (400ms) must exceed the return margin (500ms)"},
		"concurrency":   {handler.Config{Worker: worker.Config{World: w, Registry: reg, Concurrency: -1}}, "negative Worker.Concurrency"},
		"policy":        {handler.Config{Malformed: 7, Worker: worker.Config{World: w, Registry: reg}}, "unknown Malformed policy"},
		"engine config": {handler.Config{Worker: worker.Config{World: w, Registry: reg, Engine: worker.EngineOptions{InlineConcurrency: -2}}}, "Engine.InlineConcurrency is negative"},
	} {
		if _, err := handler.NewSQS(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	if _, err := handler.NewWebhook(handler.Config{Worker: worker.Config{World: w}}); err != nil {
		t.Errorf("webhook without a registry: %v", err)
	}
	if _, err := handler.NewSQS(handler.Config{Worker: worker.Config{World: w, Registry: reg}}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A bounded variable is taken up to its bound and refused past it with an
// error naming the variable and the bound.
func TestConfigFromEnvBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, ok, over, bound string
	}{
		// dynamoworld's bounds (1 KiB to 100 KiB), not a wider one the
		// World refuses later in an error that does not name the variable.
		{"SKEIN_CLAIM_CHECK_THRESHOLD", "102400", "102401", "want 1024 to 102400"},
		{"SKEIN_CLAIM_CHECK_THRESHOLD", "1024", "1023", "want 1024 to 102400"},
	} {
		env := templateEnv()
		env[c.name] = c.ok
		if _, err := handler.ConfigFromEnv(envOf(env)); err != nil {
			t.Errorf("%s=%s: %v", c.name, c.ok, err)
		}
		env[c.name] = c.over
		_, err := handler.ConfigFromEnv(envOf(env))
		if err == nil || !strings.Contains(err.Error(), c.name+"=") || !strings.Contains(err.Error(), c.bound) {
			t.Errorf("%s=%s: %v, want an error naming the variable and its bound %s", c.name, c.over, err, c.bound)
		}
	}
}
