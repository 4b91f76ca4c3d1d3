package handler_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/worker"
)

func TestFunctionVersion(t *testing.T) {
	t.Parallel()
	if sdk.DefaultVersion() != "" {
		t.Skip("the test binary carries VCS data; the cases below assume none")
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing", nil, ""},
		{"SKEIN_VERSION", map[string]string{"SKEIN_VERSION": "release-42"}, "release-42"},
		{"SKEIN_VERSION wins over the function version", map[string]string{"SKEIN_VERSION": "release-42", "AWS_LAMBDA_FUNCTION_VERSION": "7", "AWS_LAMBDA_FUNCTION_NAME": "flow"}, "release-42"},
		{"a published function version", map[string]string{"AWS_LAMBDA_FUNCTION_VERSION": "7", "AWS_LAMBDA_FUNCTION_NAME": "skein-flow"}, "skein-flow:7"},
		{"a published version without a name", map[string]string{"AWS_LAMBDA_FUNCTION_VERSION": "7"}, "7"},
		{"$LATEST is no version", map[string]string{"AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_LAMBDA_FUNCTION_NAME": "skein-flow"}, ""},
	} {
		env := templateEnv()
		maps.Copy(env, c.env)
		cfg, err := handler.ConfigFromEnv(envOf(env))
		if err != nil || cfg.Worker.Version != c.want {
			t.Errorf("%s: ConfigFromEnv's Version = %q, %v; want %q", c.name, cfg.Worker.Version, err, c.want)
		}
	}
}

func TestConfigFromEnvVersions(t *testing.T) {
	t.Parallel()
	env := templateEnv()
	env["SKEIN_VERSION"] = "v2"
	env["SKEIN_VERSIONS"] = "v1, v2,-"
	cfg, err := handler.ConfigFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Worker.Version != "v2" {
		t.Errorf("Version = %q, want v2", cfg.Worker.Version)
	}
	vs, ok := cfg.Worker.Versions.(worker.Versions)
	if !ok || len(vs) != 3 || !vs.Accepts("v1") || !vs.Accepts("v2") || !vs.Accepts("") || vs.Accepts("v3") {
		t.Errorf("Versions = %#v, want v1, v2 and none", cfg.Worker.Versions)
	}
	for _, bad := range []map[string]string{
		{"SKEIN_VERSION": "v2\x1b[31m"},
		{"SKEIN_VERSIONS": "v1,,v2"},
		{"SKEIN_VERSIONS": "v1,\x7f"},
	} {
		env := templateEnv()
		for k, v := range bad {
			env[k] = v
		}
		_, err := handler.ConfigFromEnv(envOf(env))
		for k := range bad {
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%q: error %v, want one naming %s", bad, err, k)
			}
		}
	}
}

// TestAPIStartRecordsVersion: a run the HTTP API starts records the
// function's version (Config.Version, SKEIN_VERSION).
func TestAPIStartRecordsVersion(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, func(c *handler.Config) { c.Worker.Version = "api-7" })
	r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", `{"input":{"name":"ada"}}`)
	id, _ := r.body["id"].(string)
	if r.status != http.StatusCreated || id == "" {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	if info, err := b.client.GetRun(context.Background(), id); err != nil || info.Version != "api-7" {
		t.Fatalf("run started by the API: %+v, %v; want version api-7", info, err)
	}
}
