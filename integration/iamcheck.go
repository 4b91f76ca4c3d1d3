package integration

// An offline check of IAM: the emulators enforce no permissions, so the IAM
// test (iam_test.go) records every request a function sends, decodes it into
// the IAM actions and resources AWS would authorise (decodeDynamoDB,
// decodeSQS, decodeS3), and evaluates them against the function's role in
// template.yaml (parsePolicy, iamPolicy.Allowed). Pure Go, unit tested without
// emulators (iamcheck_test.go).

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// iamRequest is one authorisation AWS makes for a request: an action on a
// resource, with the condition keys the request sets (such as s3:prefix).
type iamRequest struct {
	Action   string
	Resource string
	Context  map[string]string
}

func (r iamRequest) String() string {
	s := r.Action + " on " + r.Resource
	if len(r.Context) > 0 {
		keys := make([]string, 0, len(r.Context))
		for k := range r.Context {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+r.Context[k])
		}
		s += " (" + strings.Join(kv, ", ") + ")"
	}
	return s
}

// iamStatement is one statement of an identity policy.
type iamStatement struct {
	Sid       string
	Effect    string // Allow or Deny
	Actions   []string
	Resources []string
	// Conditions by operator, then key, then values (any of which matches).
	Conditions map[string]map[string][]string
}

// iamPolicy is the statements of a role's inline policies.
type iamPolicy []iamStatement

// rolePolicy reads the inline policies of a resolved AWS::IAM::Role's
// properties. Managed policies, NotAction and NotResource are refused: the
// check could not evaluate them.
func rolePolicy(props map[string]any) (iamPolicy, error) {
	if _, ok := props["ManagedPolicyArns"]; ok {
		return nil, errors.New("the role has ManagedPolicyArns, which this check cannot evaluate")
	}
	list, _ := props["Policies"].([]any)
	if len(list) == 0 {
		return nil, errors.New("the role has no inline policies")
	}
	var out iamPolicy
	for i, p := range list {
		pm, _ := p.(map[string]any)
		doc, _ := pm["PolicyDocument"].(map[string]any)
		if doc == nil {
			return nil, fmt.Errorf("policy %d has no PolicyDocument", i)
		}
		stmts, err := parsePolicy(doc)
		if err != nil {
			return nil, fmt.Errorf("policy %v: %w", pm["PolicyName"], err)
		}
		out = append(out, stmts...)
	}
	return out, nil
}

// parsePolicy reads a policy document (decoded JSON or resolved YAML).
func parsePolicy(doc map[string]any) (iamPolicy, error) {
	var raw []any
	switch s := doc["Statement"].(type) {
	case []any:
		raw = s
	case map[string]any:
		raw = []any{s}
	default:
		return nil, errors.New("no Statement")
	}
	var out iamPolicy
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("statement %d is not a map", i)
		}
		for _, k := range []string{"NotAction", "NotResource", "NotPrincipal", "Principal"} {
			if _, ok := m[k]; ok {
				return nil, fmt.Errorf("statement %d: %s is not supported", i, k)
			}
		}
		st := iamStatement{Sid: fmt.Sprint(m["Sid"]), Effect: fmt.Sprint(m["Effect"])}
		if m["Sid"] == nil {
			st.Sid = fmt.Sprintf("#%d", i)
		}
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fmt.Errorf("statement %s: Effect %q", st.Sid, st.Effect)
		}
		st.Actions = stringList(m["Action"])
		st.Resources = stringList(m["Resource"])
		if len(st.Actions) == 0 || len(st.Resources) == 0 {
			return nil, fmt.Errorf("statement %s: no Action or no Resource", st.Sid)
		}
		if c, ok := m["Condition"].(map[string]any); ok {
			st.Conditions = map[string]map[string][]string{}
			for op, kv := range c {
				kvm, ok := kv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("statement %s: condition %s is not a map", st.Sid, op)
				}
				st.Conditions[op] = map[string][]string{}
				for k, v := range kvm {
					st.Conditions[op][k] = stringList(v)
				}
			}
		} else if m["Condition"] != nil {
			return nil, fmt.Errorf("statement %s: Condition is not a map", st.Sid)
		}
		out = append(out, st)
	}
	return out, nil
}

func stringList(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, fmt.Sprint(e))
		}
		return out
	case []string:
		return t
	case nil:
		return nil
	}
	return []string{fmt.Sprint(v)}
}

// Allowed evaluates a request as IAM does for one identity policy: an
// explicit Deny wins, else some Allow must match. It returns the Sid of the
// deciding statement. Unknown condition operators match nothing, so a
// policy the check does not understand fails closed.
func (p iamPolicy) Allowed(r iamRequest) (bool, string) {
	allowedBy := ""
	for _, st := range p {
		if !st.matches(r) {
			continue
		}
		if st.Effect == "Deny" {
			return false, st.Sid
		}
		if allowedBy == "" {
			allowedBy = st.Sid
		}
	}
	return allowedBy != "", allowedBy
}

func (st iamStatement) matches(r iamRequest) bool {
	if !slices.ContainsFunc(st.Actions, func(a string) bool { return wildcardMatch(strings.ToLower(a), strings.ToLower(r.Action)) }) {
		return false
	}
	if !slices.ContainsFunc(st.Resources, func(res string) bool { return wildcardMatch(res, r.Resource) }) {
		return false
	}
	for op, kv := range st.Conditions {
		for key, vals := range kv {
			if !conditionHolds(op, r.Context, key, vals) {
				return false
			}
		}
	}
	return true
}

// conditionHolds evaluates one condition key. Condition keys are matched
// case-insensitively, as IAM does; values by the operator. The set
// operators ForAllValues and ForAnyValue see a request's value as a set of
// one (a request naming several values, such as a batch's partition keys,
// is decoded as one request per value): ForAllValues holds for a request
// without the key (the empty set), ForAnyValue does not.
func conditionHolds(op string, ctx map[string]string, key string, vals []string) bool {
	set, rest, isSet := strings.Cut(op, ":")
	if !isSet {
		rest = op
	} else if set != "ForAllValues" && set != "ForAnyValue" {
		return false
	}
	ifExists := strings.HasSuffix(rest, "IfExists")
	base := strings.TrimSuffix(rest, "IfExists")
	var got string
	present := false
	for k, v := range ctx {
		if strings.EqualFold(k, key) {
			got, present = v, true
		}
	}
	if !present && isSet {
		return set == "ForAllValues"
	}
	if !present {
		switch {
		case ifExists:
			return true
		case base == "StringNotEquals" || base == "StringNotLike":
			return true
		case base == "Null":
			return slices.Contains(vals, "true")
		}
		return false
	}
	switch base {
	case "StringEquals":
		return slices.Contains(vals, got)
	case "StringNotEquals":
		return !slices.Contains(vals, got)
	case "StringEqualsIgnoreCase":
		return slices.ContainsFunc(vals, func(v string) bool { return strings.EqualFold(v, got) })
	case "StringLike":
		return slices.ContainsFunc(vals, func(v string) bool { return wildcardMatch(v, got) })
	case "StringNotLike":
		return !slices.ContainsFunc(vals, func(v string) bool { return wildcardMatch(v, got) })
	case "Null":
		return slices.Contains(vals, "false")
	}
	return false
}

// wildcardMatch matches s against an IAM pattern: * is any run of
// characters (including none, and /), ? is one character.
func wildcardMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Actions lists the actions a policy's Allow statements name (as written,
// wildcards included), sorted.
func (p iamPolicy) Actions() []string {
	var out []string
	for _, st := range p {
		if st.Effect != "Allow" {
			continue
		}
		for _, a := range st.Actions {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// iamARNs says how the emulators' names map to ARNs.
type iamARNs struct {
	Region, Account string
	// Queues maps a queue URL to its ARN.
	Queues map[string]string
	// PartitionKey is the event table's partition key attribute, whose
	// values decodeDynamoDB reports as dynamodb:LeadingKeys ("pk" when
	// empty).
	PartitionKey string
}

// Table is a DynamoDB table's ARN (a name that is an ARN already is kept).
func (a iamARNs) Table(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", a.Region, a.Account, name)
}

// Bucket is an S3 bucket's ARN.
func (a iamARNs) Bucket(name string) string { return "arn:aws:s3:::" + name }

// Queue is a queue's ARN by URL; an unknown URL gives a resource no policy
// grants.
func (a iamARNs) Queue(u string) string {
	if arn, ok := a.Queues[u]; ok {
		return arn
	}
	return "unknown-queue-url:" + u
}

// sqsBatchAction is the action authorising a batch request.
var sqsBatchAction = map[string]string{
	"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
	"ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}

// decodeSQS decodes an SQS request, in the JSON protocol (X-Amz-Target
// AmazonSQS.Action) or the query protocol (a form with Action), into the
// action on its queue (batches as their single-message action).
func decodeSQS(arns iamARNs, target, contentType string, body []byte) ([]iamRequest, error) {
	var op, queueURL, queueName string
	if a, ok := strings.CutPrefix(target, "AmazonSQS."); ok {
		var in struct{ QueueUrl, QueueName string }
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, fmt.Errorf("SQS %s: body: %w", a, err)
		}
		op, queueURL, queueName = a, in.QueueUrl, in.QueueName
	} else if strings.HasPrefix(contentType, "application/x-www-form-urlencoded") {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("SQS: form: %w", err)
		}
		op, queueURL, queueName = form.Get("Action"), form.Get("QueueUrl"), form.Get("QueueName")
	}
	if op == "" {
		return nil, fmt.Errorf("SQS: no action (X-Amz-Target %q, Content-Type %q)", target, contentType)
	}
	if b, ok := sqsBatchAction[op]; ok {
		op = b
	}
	var res string
	switch {
	case queueURL != "":
		res = arns.Queue(queueURL)
	case queueName != "":
		res = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", arns.Region, arns.Account, queueName)
	default:
		res = "*"
	}
	return []iamRequest{{Action: "sqs:" + op, Resource: res}}, nil
}

// s3ListKeys are the ListObjects parameters IAM has condition keys for.
var s3ListKeys = map[string]string{"prefix": "s3:prefix", "delimiter": "s3:delimiter", "max-keys": "s3:max-keys"}

// decodeS3 decodes a path-style S3 request (/bucket/key) by method, path and
// query into the actions on the bucket or object: ListObjects(V2) and
// HeadBucket are s3:ListBucket on the bucket with s3:prefix (and
// s3:delimiter, s3:max-keys) as the request sets them; HeadObject is
// s3:GetObject; a multipart upload's steps s3:PutObject; DeleteObjects
// s3:DeleteObject per key; CopyObject s3:PutObject and s3:GetObject on the
// source. Any other subresource is an error, so that nothing goes unchecked.
func decodeS3(arns iamARNs, method, escapedPath string, query url.Values, header map[string][]string, body []byte) ([]iamRequest, error) {
	p, err := url.PathUnescape(escapedPath)
	if err != nil {
		return nil, fmt.Errorf("S3: path %q: %w", escapedPath, err)
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if bucket == "" {
		return []iamRequest{{Action: "s3:ListAllMyBuckets", Resource: "*"}}, nil
	}
	bucketARN := arns.Bucket(bucket)
	sub := ""
	for q := range query {
		switch q {
		case "list-type", "prefix", "delimiter", "max-keys", "continuation-token", "start-after", "encoding-type",
			"fetch-owner", "marker", "x-id", "partNumber", "response-content-type", "response-cache-control":
		default:
			if sub != "" {
				return nil, fmt.Errorf("S3 %s %s: subresources %s and %s", method, escapedPath, sub, q)
			}
			sub = q
		}
	}
	one := func(action, res string) ([]iamRequest, error) {
		return []iamRequest{{Action: action, Resource: res}}, nil
	}
	if key == "" {
		switch {
		case (method == "GET") && sub == "":
			ctx := map[string]string{}
			for q, k := range s3ListKeys {
				if query.Has(q) {
					ctx[k] = query.Get(q)
				}
			}
			return []iamRequest{{Action: "s3:ListBucket", Resource: bucketARN, Context: ctx}}, nil
		case method == "HEAD" && sub == "":
			return one("s3:ListBucket", bucketARN)
		case method == "GET" && sub == "location":
			return one("s3:GetBucketLocation", bucketARN)
		case method == "GET" && sub == "uploads":
			return one("s3:ListBucketMultipartUploads", bucketARN)
		case method == "POST" && sub == "delete":
			var del struct {
				Object []struct{ Key string }
			}
			if err := xml.Unmarshal(body, &del); err != nil {
				return nil, fmt.Errorf("S3 DeleteObjects: body: %w", err)
			}
			var out []iamRequest
			for _, o := range del.Object {
				out = append(out, iamRequest{Action: "s3:DeleteObject", Resource: bucketARN + "/" + o.Key})
			}
			return out, nil
		}
		return nil, fmt.Errorf("S3: unknown bucket request %s %s?%s", method, escapedPath, query.Encode())
	}
	objARN := bucketARN + "/" + key
	switch {
	case (method == "GET" || method == "HEAD") && sub == "":
		return one("s3:GetObject", objARN)
	case (method == "GET" || method == "HEAD") && sub == "versionId":
		return one("s3:GetObjectVersion", objARN)
	case method == "GET" && sub == "uploadId":
		return one("s3:ListMultipartUploadParts", objARN)
	case method == "GET" && sub == "tagging":
		return one("s3:GetObjectTagging", objARN)
	case method == "PUT" && (sub == "" || sub == "uploadId"):
		out := []iamRequest{{Action: "s3:PutObject", Resource: objARN}}
		if src := firstHeader(header, "X-Amz-Copy-Source"); src != "" {
			if s, err := url.PathUnescape(src); err == nil {
				src = s
			}
			src, _, _ = strings.Cut(strings.TrimPrefix(src, "/"), "?")
			out = append(out, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::" + src})
		}
		return out, nil
	case method == "PUT" && sub == "tagging":
		return one("s3:PutObjectTagging", objARN)
	case method == "POST" && (sub == "uploads" || sub == "uploadId"):
		return one("s3:PutObject", objARN)
	case method == "DELETE" && sub == "":
		return one("s3:DeleteObject", objARN)
	case method == "DELETE" && sub == "uploadId":
		return one("s3:AbortMultipartUpload", objARN)
	}
	return nil, fmt.Errorf("S3: unknown object request %s %s?%s", method, escapedPath, query.Encode())
}

func firstHeader(h map[string][]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}
