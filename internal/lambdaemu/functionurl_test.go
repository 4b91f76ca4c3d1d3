package lambdaemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// echoFunction answers every event with a fixed response and keeps the events.
type echoFunction struct {
	mu     sync.Mutex
	events []events.LambdaFunctionURLRequest
	resp   *Response
}

func (f *echoFunction) Invoke(_ context.Context, payload []byte) (*Response, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return f.resp, nil
}

func (f *echoFunction) seen() []events.LambdaFunctionURLRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.LambdaFunctionURLRequest(nil), f.events...)
}

var testPrincipal = Principal{AccessKeyID: "AKIDCALLER", SecretAccessKey: "caller-secret", ARN: "arn:aws:iam::000000000000:user/caller"}

func startURL(t *testing.T, auth string, resp *Response) (*FunctionURL, *echoFunction) {
	t.Helper()
	fn := &echoFunction{resp: resp}
	u, err := NewFunctionURL(FunctionURLConfig{Function: fn, AuthType: auth, Principals: []Principal{testPrincipal}, Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u, fn
}

// signed builds a request signed as the AWS SDK signs it, then lets change alter it.
func signed(t *testing.T, method, url, body string, creds aws.Credentials, service, region string, at time.Time, change func(*http.Request)) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(req)
	}
	return req
}

func sendHTTP(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// With AuthType AWS_IAM only a request signed (SigV4, service lambda, the URL's region) by an
// allowed principal reaches the function; every other one is 403 and invokes nothing.
func TestFunctionURLIAMAuth(t *testing.T) {
	t.Parallel()
	ok := &Response{Payload: []byte(`{"statusCode":201,"headers":{"Content-Type":"application/json","X-Run":"r1"},"cookies":["a=b"],"body":"eyJvayI6dHJ1ZX0=","isBase64Encoded":true}`)}
	u, fn := startURL(t, AuthIAM, ok)
	creds := aws.Credentials{AccessKeyID: testPrincipal.AccessKeyID, SecretAccessKey: testPrincipal.SecretAccessKey}
	now := time.Now()
	target := u.URL() + "v1/runs/a%2Fb?limit=2&cursor=x"
	body := `{"input":{"n":1}}`
	refused := map[string]*http.Request{
		"unsigned": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
			return r
		}(),
		"not SigV4":      signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }),
		"unknown key":    signed(t, "POST", target, body, aws.Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: "s"}, "lambda", "eu-west-1", now, nil),
		"wrong secret":   signed(t, "POST", target, body, aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: "guess"}, "lambda", "eu-west-1", now, nil),
		"other service":  signed(t, "POST", target, body, creds, "execute-api", "eu-west-1", now, nil),
		"other region":   signed(t, "POST", target, body, creds, "lambda", "us-east-1", now, nil),
		"stale":          signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now.Add(-20*time.Minute), nil),
		"body changed":   signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(`{"input":{"n":2}}`)) }),
		"header changed": signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }),
		"query changed":  signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.URL.RawQuery = "cursor=x&limit=3" }),
		"method changed": signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.Method = http.MethodPut }),
		"path changed":   signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/v1/runs/other", "" }),
		"signature wrong": signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, func(r *http.Request) {
			r.Header.Set("Authorization", r.Header.Get("Authorization")[:len(r.Header.Get("Authorization"))-4]+"0000")
		}),
	}
	for name, req := range refused {
		resp, got := sendHTTP(t, req)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(got, `"Message":"Forbidden"`) {
			t.Errorf("%s: %d %s, want 403 Forbidden", name, resp.StatusCode, got)
		}
	}
	if n := len(fn.seen()); n != 0 || u.Invocations() != 0 || u.Refused() != int64(len(refused)) {
		t.Fatalf("refused requests invoked the function %d times (%d refused)", n, u.Refused())
	}

	resp, got := sendHTTP(t, signed(t, "POST", target, body, creds, "lambda", "eu-west-1", now, nil))
	if resp.StatusCode != http.StatusCreated || got != `{"ok":true}` || resp.Header.Get("X-Run") != "r1" || resp.Header.Get("Set-Cookie") != "a=b" {
		t.Fatalf("signed: %d %s %v", resp.StatusCode, got, resp.Header)
	}
	evs := fn.seen()
	if len(evs) != 1 {
		t.Fatalf("%d invocations", len(evs))
	}
	ev := evs[0]
	iam := ev.RequestContext.Authorizer
	if ev.Version != "2.0" || ev.RawPath != "/v1/runs/a%2Fb" || ev.RawQueryString != "cursor=x&limit=2" || ev.Body != body ||
		ev.RequestContext.HTTP.Method != "POST" || ev.Headers["content-type"] != "application/json" ||
		iam == nil || iam.IAM == nil || iam.IAM.UserARN != testPrincipal.ARN || iam.IAM.AccessKey != testPrincipal.AccessKeyID {
		t.Errorf("event %+v", ev)
	}
}

// With AuthType NONE anyone reaches the function; a function error is a 502.
func TestFunctionURLNoAuth(t *testing.T) {
	t.Parallel()
	u, fn := startURL(t, AuthNone, &Response{Payload: []byte(`{"statusCode":202}`)})
	req, _ := http.NewRequest(http.MethodPost, u.URL()+".well-known/workflow/v1/webhook/tok", strings.NewReader("\xff\xfe"))
	if resp, _ := sendHTTP(t, req); resp.StatusCode != http.StatusAccepted {
		t.Errorf("unsigned: %d, want 202", resp.StatusCode)
	}
	if evs := fn.seen(); len(evs) != 1 || !evs[0].IsBase64Encoded || evs[0].Body != "//4=" || evs[0].RequestContext.Authorizer != nil {
		t.Errorf("events %+v", evs)
	}
	failing, _ := startURL(t, AuthNone, &Response{Err: &FunctionError{Type: "Runtime.ExitError"}})
	req, _ = http.NewRequest(http.MethodGet, failing.URL(), nil)
	if resp, _ := sendHTTP(t, req); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("function error: %d, want 502", resp.StatusCode)
	}
}

// The template's Function URLs: the API's takes IAM credentials, the webhook's none.
func TestTemplateFunctionURLAuth(t *testing.T) {
	t.Parallel()
	tpl, err := ReadTemplate(repoTemplate)
	if err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]string{"ApiFunction": AuthIAM, "WebhookFunction": AuthNone} {
		if got, err := tpl.FunctionURLAuth(fn, nil); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", fn, got, err, want)
		}
	}
	if _, err := tpl.FunctionURLAuth("FlowFunction", nil); err == nil {
		t.Error("FlowFunction has no Function URL")
	}
	if _, err := NewFunctionURL(FunctionURLConfig{Function: &echoFunction{}, AuthType: AuthIAM}); err == nil {
		t.Error("AWS_IAM without principals")
	}
}
