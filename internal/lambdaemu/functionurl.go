package lambdaemu

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Function URL limits and answers, as Lambda has them.
const (
	// maxURLRequestBody is Lambda's limit on a buffered invocation's payload.
	maxURLRequestBody = 6 << 20
	// AuthNone and AuthIAM are a Function URL's AuthType values.
	AuthNone = "NONE"
	AuthIAM  = "AWS_IAM"
)

// URLInvoker is what a FunctionURL invokes: a Function.
type URLInvoker interface {
	Invoke(ctx context.Context, payload []byte) (*Response, error)
}

// Principal is an IAM identity allowed to call a Function URL with AuthType AWS_IAM: its access key
// signs the request (SigV4), and ARN is what Lambda passes the function as the caller.
type Principal struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	ARN                                        string
}

// FunctionURLConfig configures a FunctionURL.
type FunctionURLConfig struct {
	// Function is invoked with each request (required).
	Function URLInvoker
	// AuthType is the template's FunctionUrlConfig.AuthType: NONE or AWS_IAM (required).
	AuthType string
	// Principals, with AWS_IAM, are the identities whose signatures are accepted (Lambda's
	// lambda:InvokeFunctionUrl permission); any other request is refused with 403.
	Principals []Principal
	// Region and AccountID name where the URL lives (defaults us-east-1 and 000000000000): a
	// signature's credential scope must name the region and the service lambda.
	Region, AccountID string
	// Now is the clock signatures are checked against (default time.Now): a request signed more
	// than 15 minutes away from it is refused, as AWS refuses it.
	Now func() time.Time
}

// FunctionURL serves a function over HTTP as a Lambda Function URL does with InvokeMode BUFFERED:
// each request becomes an events.LambdaFunctionURLRequest (payload format 2.0), the function's
// events.LambdaFunctionURLResponse becomes the HTTP response, and a function error is a 502. With
// AuthType AWS_IAM a request whose SigV4 signature (service lambda) is missing, malformed, stale,
// by an access key no Principal has, or wrong is answered 403 and never reaches the function.
// Requests are served one at a time per Function (Lambda would start more execution environments).
type FunctionURL struct {
	cfg     FunctionURLConfig
	srv     *http.Server
	ln      net.Listener
	invoked atomic.Int64
	refused atomic.Int64
}

// NewFunctionURL starts a Function URL on 127.0.0.1.
func NewFunctionURL(cfg FunctionURLConfig) (*FunctionURL, error) {
	switch {
	case cfg.Function == nil:
		return nil, errors.New("lambdaemu: FunctionURLConfig.Function is required")
	case cfg.AuthType != AuthNone && cfg.AuthType != AuthIAM:
		return nil, fmt.Errorf("lambdaemu: FunctionURLConfig.AuthType %q: want %s or %s", cfg.AuthType, AuthNone, AuthIAM)
	case cfg.AuthType == AuthIAM && len(cfg.Principals) == 0:
		return nil, errors.New("lambdaemu: AuthType AWS_IAM without Principals would refuse every request")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &FunctionURL{cfg: cfg, ln: ln}
	u.srv = &http.Server{Handler: u, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// URL returns the Function URL's base, ending with a slash as Lambda's FunctionUrl does.
func (u *FunctionURL) URL() string { return "http://" + u.ln.Addr().String() + "/" }

// Invocations returns how many requests reached the function; Refused how many were refused
// for their authentication.
func (u *FunctionURL) Invocations() int64 { return u.invoked.Load() }

// Refused returns how many requests were refused (403) without invoking the function.
func (u *FunctionURL) Refused() int64 { return u.refused.Load() }

// Close stops serving.
func (u *FunctionURL) Close() error { return u.srv.Close() }

// urlError writes an error as Lambda's front end does: a JSON {"Message": ...} body.
func urlError(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", errType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

func (u *FunctionURL) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxURLRequestBody+1))
	if err != nil {
		urlError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	if len(body) > maxURLRequestBody {
		urlError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
		return
	}
	var caller *Principal
	if u.cfg.AuthType == AuthIAM {
		if caller, err = u.authenticate(r, body); err != nil {
			u.refused.Add(1)
			urlError(w, http.StatusForbidden, "AccessDeniedException", "Forbidden")
			return
		}
	}
	payload, err := json.Marshal(u.event(r, body, caller))
	if err != nil {
		urlError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	u.invoked.Add(1)
	resp, err := u.cfg.Function.Invoke(r.Context(), payload)
	if err != nil {
		urlError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	if resp.Err != nil {
		urlError(w, http.StatusBadGateway, "FunctionError", "Internal Server Error")
		return
	}
	writeURLResponse(w, resp.Payload)
}

// event builds the Function URL event of a request.
func (u *FunctionURL) event(r *http.Request, body []byte, caller *Principal) events.LambdaFunctionURLRequest {
	now := u.cfg.Now()
	headers := map[string]string{}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.String())
	}
	host, _, _ := strings.Cut(r.Host, ":")
	ev := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery, Headers: headers, Cookies: cookies,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: u.cfg.AccountID, RequestID: newRequestID(), DomainName: host, DomainPrefix: strings.Split(host, ".")[0],
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP(r.RemoteAddr), UserAgent: r.UserAgent(),
			},
		},
	}
	if caller != nil {
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
				AccessKey: caller.AccessKeyID, AccountID: u.cfg.AccountID, CallerID: caller.AccessKeyID, UserARN: caller.ARN,
			},
		}
	}
	// Lambda base64-encodes a body that is not text; a body that is not UTF-8 stands for one here.
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

func sourceIP(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

// writeURLResponse writes a function's response: the response format when the payload has a
// statusCode, and otherwise (as Lambda infers) a 200 whose JSON body is the payload.
func writeURLResponse(w http.ResponseWriter, payload []byte) {
	var probe map[string]json.RawMessage
	var resp events.LambdaFunctionURLResponse
	if json.Unmarshal(payload, &probe) != nil || probe["statusCode"] == nil || json.Unmarshal(payload, &resp) != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			urlError(w, http.StatusBadGateway, "FunctionError", "Internal Server Error")
			return
		}
		body = b
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

// FunctionURLAuth returns the AuthType of a function's FunctionUrlConfig in the template (an error
// when the function has no Function URL).
func (t *Template) FunctionURLAuth(logicalID string, opts *ResolveOptions) (string, error) {
	_, props, err := t.Resource(logicalID, opts)
	if err != nil {
		return "", err
	}
	cfg, ok := props["FunctionUrlConfig"].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s has no FunctionUrlConfig", logicalID)
	}
	auth, _ := cfg["AuthType"].(string)
	if auth != AuthNone && auth != AuthIAM {
		return "", fmt.Errorf("%s: FunctionUrlConfig.AuthType %q", logicalID, auth)
	}
	return auth, nil
}
