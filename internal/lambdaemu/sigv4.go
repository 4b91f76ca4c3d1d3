package lambdaemu

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The parts of SigV4 a Function URL checks.
const (
	sigv4Algorithm   = "AWS4-HMAC-SHA256"
	sigv4Service     = "lambda"
	sigv4TimeFormat  = "20060102T150405Z"
	sigv4MaxSkew     = 15 * time.Minute
	unsignedPayload  = "UNSIGNED-PAYLOAD"
	amzContentSHA256 = "X-Amz-Content-Sha256"
)

// sigv4Auth is a parsed Authorization header.
type sigv4Auth struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

// parseSigV4 parses "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/lambda/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=hex".
func parseSigV4(h string) (*sigv4Auth, error) {
	alg, rest, ok := strings.Cut(h, " ")
	if !ok || alg != sigv4Algorithm {
		return nil, fmt.Errorf("not %s", sigv4Algorithm)
	}
	a := &sigv4Auth{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("malformed %q", part)
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return nil, fmt.Errorf("malformed credential scope %q", v)
			}
			a.accessKey, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.accessKey == "" || len(a.signedHeaders) == 0 || a.signature == "" {
		return nil, errors.New("credential, signed headers or signature missing")
	}
	return a, nil
}

// authenticate checks a request's SigV4 signature as Lambda does for AuthType AWS_IAM and
// returns the principal who signed it. It recomputes the signature with the AWS SDK's signer over
// the headers the request says it signed, with the principal's secret key.
func (u *FunctionURL) authenticate(r *http.Request, body []byte) (*Principal, error) {
	a, err := parseSigV4(r.Header.Get("Authorization"))
	if err != nil {
		return nil, fmt.Errorf("authorization: %w", err)
	}
	var p *Principal
	for i := range u.cfg.Principals {
		if u.cfg.Principals[i].AccessKeyID == a.accessKey {
			p = &u.cfg.Principals[i]
		}
	}
	switch {
	case p == nil:
		return nil, fmt.Errorf("access key %s may not invoke the function", a.accessKey)
	case a.service != sigv4Service || a.region != u.cfg.Region:
		return nil, fmt.Errorf("credential scope %s/%s, want %s/%s", a.region, a.service, u.cfg.Region, sigv4Service)
	case p.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != p.SessionToken:
		return nil, errors.New("security token missing or wrong")
	}
	signedAt, err := time.Parse(sigv4TimeFormat, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return nil, fmt.Errorf("X-Amz-Date: %w", err)
	}
	if d := u.cfg.Now().Sub(signedAt); d > sigv4MaxSkew || d < -sigv4MaxSkew {
		return nil, fmt.Errorf("signed at %s, %s from now", signedAt, d)
	}
	if a.date != signedAt.Format("20060102") {
		return nil, fmt.Errorf("credential date %s is not X-Amz-Date's", a.date)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get(amzContentSHA256); h != "" && h != unsignedPayload && h != hash {
		return nil, fmt.Errorf("%s does not match the body", amzContentSHA256)
	} else if h == unsignedPayload {
		hash = unsignedPayload
	}
	want, err := resign(r, a, hash, signedAt, p)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return nil, errors.New("signature does not match")
	}
	return p, nil
}

// resign signs a copy of r holding only the headers a lists as signed, with p's secret key, and
// returns the signature.
func resign(r *http.Request, a *sigv4Auth, payloadHash string, at time.Time, p *Principal) (string, error) {
	signed := a.signedHeaders
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	c, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
	if err != nil {
		return "", err
	}
	c.Host = r.Host
	for _, h := range signed {
		switch h {
		case "host", "x-amz-date", "x-amz-security-token":
			// The signer sets these itself.
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			vs := r.Header.Values(h)
			if len(vs) == 0 {
				return "", fmt.Errorf("signed header %s is missing", h)
			}
			for _, v := range vs {
				c.Header.Add(h, v)
			}
		}
	}
	creds := aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey}
	if slices.Contains(signed, "x-amz-security-token") {
		creds.SessionToken = r.Header.Get("X-Amz-Security-Token")
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, c, payloadHash, sigv4Service, a.region, at); err != nil {
		return "", err
	}
	got, err := parseSigV4(c.Header.Get("Authorization"))
	if err != nil {
		return "", err
	}
	if strings.Join(got.signedHeaders, ";") != strings.Join(signed, ";") {
		return "", fmt.Errorf("signed headers %s, the request says %s", strings.Join(got.signedHeaders, ";"), strings.Join(signed, ";"))
	}
	return got.signature, nil
}
