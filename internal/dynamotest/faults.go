package dynamotest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Fault is one kind of injected failure.
type Fault string

// The faults an Injector can inject. Each answers a request attempt as AWS
// would, and the SDK's real deserializer turns the answer into its error.
const (
	// Throttled: DynamoDB ProvisionedThroughputExceededException, SQS
	// ThrottlingException, S3 503 SlowDown. The request is not applied.
	Throttled Fault = "throttled"
	// LimitExceeded: DynamoDB RequestLimitExceeded (others: Throttled).
	LimitExceeded Fault = "limit-exceeded"
	// ServerError: a 500 (S3: InternalError). The request is not applied.
	ServerError Fault = "500"
	// Unavailable: a 503. The request is not applied.
	Unavailable Fault = "503"
	// LostAnswer: the request is applied, then its answer is replaced by a
	// 500: the caller cannot know it succeeded.
	LostAnswer Fault = "lost-answer"
	// TxConflict: DynamoDB only. TransactWriteItems is cancelled with
	// TransactionConflict reasons; other writes fail with
	// TransactionConflictException. The request is not applied.
	TxConflict Fault = "transaction-conflict"
)

// Injector injects faults into a share of request attempts, through SDK
// middleware at the deserialize step (so that every retry attempt is
// subject to it). It is safe for concurrent use.
type Injector struct {
	mu     sync.Mutex
	rng    *rand.Rand
	rate   float64
	faults []Fault
	counts map[string]int
	// Only, when set, limits injection to these services ("DynamoDB",
	// "SQS", "S3").
	Only map[string]bool
	// Cover lists faults that must be injected at least once, as
	// "service/fault" or "service/operation/fault" keys of Counts: while one
	// is still missing, the next attempt it can apply to gets it, whatever
	// the rate, so a test that checks Counts for them does not depend on
	// how its requests happened to interleave.
	Cover []string
}

// NewInjector fails a share rate of attempts with faults chosen at random
// (seeded: the same seed gives the same sequence of choices).
func NewInjector(seed uint64, rate float64, faults ...Fault) *Injector {
	return &Injector{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), rate: rate, faults: faults, counts: map[string]int{}}
}

// Counts returns how many faults were injected, by "service/fault".
func (in *Injector) Counts() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
	}
	return out
}

// String lists the counts.
func (in *Injector) String() string {
	c := in.Counts()
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, c[k])
	}
	return strings.TrimSpace(b.String())
}

func (in *Injector) pick(service, op string) Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.Only != nil && !in.Only[service] {
		return ""
	}
	f := in.uncovered(service, op)
	if f == "" {
		if in.rng.Float64() >= in.rate {
			return ""
		}
		f = in.faults[in.rng.IntN(len(in.faults))]
	}
	if f == TxConflict && service != "DynamoDB" {
		f = Throttled
	}
	if f == LimitExceeded && service != "DynamoDB" {
		f = Throttled
	}
	in.counts[service+"/"+string(f)]++
	in.counts[service+"/"+op+"/"+string(f)]++
	return f
}

// uncovered returns a fault of Cover not injected yet that applies to an
// attempt of service's operation op, or "". Called with mu held.
func (in *Injector) uncovered(service, op string) Fault {
	for _, k := range in.Cover {
		if in.counts[k] > 0 {
			continue
		}
		parts := strings.Split(k, "/")
		switch {
		case len(parts) == 2 && parts[0] == service:
			return Fault(parts[1])
		case len(parts) == 3 && parts[0] == service && parts[1] == op:
			return Fault(parts[2])
		}
	}
	return ""
}

// Add installs the injector on a client's middleware stack (an APIOptions
// entry).
func (in *Injector) Add(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("skein-fault-injector",
		func(ctx context.Context, input middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
			f := in.pick(service, op)
			if f == "" {
				return next.HandleDeserialize(ctx, input)
			}
			req, _ := input.Request.(*smithyhttp.Request)
			if f == LostAnswer {
				out, md, err := next.HandleDeserialize(ctx, input)
				if err != nil {
					return out, md, err
				}
				if r, ok := out.RawResponse.(*smithyhttp.Response); ok && r.Body != nil {
					_, _ = io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
				out.RawResponse = answer(req, service, op, ServerError)
				return out, md, nil
			}
			return middleware.DeserializeOutput{RawResponse: answer(req, service, op, f)}, middleware.Metadata{}, nil
		}), middleware.After)
}

// answer builds the HTTP answer AWS gives for a fault.
func answer(req *smithyhttp.Request, service, op string, f Fault) *smithyhttp.Response {
	status, body, header := 500, "", http.Header{}
	switch service {
	case "DynamoDB":
		header.Set("Content-Type", "application/x-amz-json-1.0")
		code := map[Fault]string{
			Throttled: "ProvisionedThroughputExceededException", LimitExceeded: "RequestLimitExceeded",
			ServerError: "InternalServerError", Unavailable: "ServiceUnavailable", TxConflict: "TransactionConflictException",
		}[f]
		status = map[Fault]int{Throttled: 400, LimitExceeded: 400, ServerError: 500, Unavailable: 503, TxConflict: 400}[f]
		extra := ""
		if f == TxConflict && op == "TransactWriteItems" {
			code = "TransactionCanceledException"
			extra = `,"CancellationReasons":[{"Code":"TransactionConflict","Message":"injected"}]`
		}
		body = fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected %s"%s}`, code, f, extra)
	case "SQS":
		header.Set("Content-Type", "application/x-amz-json-1.0")
		code := map[Fault]string{Throttled: "ThrottlingException", ServerError: "InternalError", Unavailable: "ServiceUnavailable"}[f]
		status = map[Fault]int{Throttled: 400, ServerError: 500, Unavailable: 503}[f]
		header.Set("x-amzn-query-error", code+";Sender")
		body = fmt.Sprintf(`{"__type":"com.amazonaws.sqs#%s","message":"injected %s"}`, code, f)
	default: // S3
		header.Set("Content-Type", "application/xml")
		code := map[Fault]string{Throttled: "SlowDown", ServerError: "InternalError", Unavailable: "ServiceUnavailable"}[f]
		status = map[Fault]int{Throttled: 503, ServerError: 500, Unavailable: 503}[f]
		body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected %s</Message></Error>`, code, f)
	}
	r := &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: header,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	if req != nil {
		r.Request = req.Request
	}
	if op == "HeadObject" || op == "HeadBucket" {
		r.Body = http.NoBody // HEAD answers have no body
	}
	return &smithyhttp.Response{Response: r}
}
