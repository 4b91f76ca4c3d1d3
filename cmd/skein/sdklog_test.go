package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestRemoteErrorIsOneLine: without credentials, a remote command fails
// with its own error on one line, without the AWS SDK's own log lines (its
// IMDSv1 fallback warning) before it.
func TestRemoteErrorIsOneLine(t *testing.T) {
	// The instance metadata service refuses IMDSv2 tokens: the SDK falls
	// back to IMDSv1 and, with its logger on, says so on stderr.
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer imds.Close()
	home := t.TempDir()
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.URL, "AWS_EC2_METADATA_DISABLED": "false",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": home + "/config", "AWS_SHARED_CREDENTIALS_FILE": home + "/credentials",
		"AWS_REGION": "us-east-1", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_CLOUDFORMATION": "",
	} {
		t.Setenv(k, v)
	}
	// The SDK's default logger writes to the process's stderr: catch it.
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = wr
	r := cli("-stack", "foo", "runs", "list")
	os.Stderr = stderr
	_ = wr.Close()
	sdk, _ := io.ReadAll(rd)
	if len(sdk) > 0 {
		t.Errorf("the AWS SDK wrote to stderr:\n%s", sdk)
	}
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if strings.Contains(r.err, "SDK ") || strings.Count(r.err, "\n") != 1 || !strings.HasPrefix(r.err, "skein runs list: ") {
		t.Errorf("stderr is not one line of skein's:\n%s", r.err)
	}
}
