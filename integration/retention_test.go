package integration

// This file has no build tag: it needs no emulator.

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/internal/lambdaemu"
)

// TestRetentionDrivesItemsAndObjects: one template parameter, RetentionDays,
// sets both how long a finished run's DynamoDB items live (the functions'
// SKEIN_RETENTION_DAYS, which handler.ConfigFromEnv turns into the World's
// Retention) and when the bucket expires the run's S3 objects, so that an
// object outlives every item that points to it: S3 counts from the
// object's write, which is at most RetentionDays before the run's end
// (runs end within RetentionDays of starting); DynamoDB from the run's end,
// plus up to 2 days before it deletes an expired item. 0 keeps both
// forever: no TTL, no expiration.
func TestRetentionDrivesItemsAndObjects(t *testing.T) {
	t.Parallel()
	tpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	values := tpl.AllowedValues("RetentionDays")
	if len(values) < 2 || values[0] != "0" {
		t.Fatalf("RetentionDays allows %v, want 0 (forever) first and periods", values)
	}
	if def, err := tpl.Parameter("RetentionDays", nil); err != nil || def != "0" {
		t.Errorf("RetentionDays defaults to %q (%v), want 0: keep forever", def, err)
	}
	for _, v := range values {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			days, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			opts := &lambdaemu.ResolveOptions{Parameters: map[string]string{"RetentionDays": v}}
			for _, fn := range []string{"FlowFunction", "WebhookFunction", "ApiFunction"} {
				cfg, err := handler.ConfigFromEnv(functionEnv(t, tpl, fn, opts))
				if err != nil {
					t.Fatalf("%s: %v", fn, err)
				}
				if want := time.Duration(days) * 24 * time.Hour; cfg.Resources.Retention != want {
					t.Errorf("%s: Retention %s, want %s", fn, cfg.Resources.Retention, want)
				}
			}
			expiration, set := objectExpiration(t, tpl, opts)
			switch {
			case days == 0 && set:
				t.Errorf("the bucket expires objects after %d days, want never", expiration)
			case days > 0 && !set:
				t.Errorf("the bucket never expires objects, want after %d days or more", 2*days+2)
			case days > 0 && expiration < 2*days+2:
				t.Errorf("the bucket expires objects after %d days: before the items of a run that lasted %d days and was kept %d more (+2 for TTL's delay)", expiration, days, days)
			}
		})
	}
}

// functionEnv returns a function's resolved environment, as a getenv.
func functionEnv(t *testing.T, tpl *lambdaemu.Template, fn string, opts *lambdaemu.ResolveOptions) func(string) string {
	t.Helper()
	_, props, err := tpl.Resource(fn, opts)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if _, ok := vars[envvars.RetentionDays]; !ok {
		t.Fatalf("%s does not set %s", fn, envvars.RetentionDays)
	}
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
}

// objectExpiration returns the days after which the bucket's lifecycle
// rules expire objects, and whether any does.
func objectExpiration(t *testing.T, tpl *lambdaemu.Template, opts *lambdaemu.ResolveOptions) (int, bool) {
	t.Helper()
	_, props, err := tpl.Resource("DataBucket", opts)
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := props["LifecycleConfiguration"].(map[string]any)
	rules, _ := lc["Rules"].([]any)
	days, set := 0, false
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		if rule["Status"] != "Enabled" {
			continue
		}
		if _, ok := rule["ExpirationDate"]; ok {
			t.Fatalf("rule %v expires by date", rule)
		}
		if e, ok := rule["ExpirationInDays"]; ok {
			n, err := strconv.Atoi(fmt.Sprint(e))
			if err != nil {
				t.Fatalf("ExpirationInDays %v: %v", e, err)
			}
			if !set || n < days {
				days, set = n, true
			}
		}
	}
	return days, set
}
