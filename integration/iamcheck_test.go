package integration

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/skeinflow/skein/internal/lambdaemu"
)

var testARNs = iamARNs{Region: "us-east-1", Account: "000000000000", Queues: map[string]string{
	"http://q/000000000000/work": "arn:aws:sqs:us-east-1:000000000000:work",
}}

func TestWildcardMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "abc/d", true}, {"a*d", "abc/d", true}, {"a*e", "abc/d", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"skein/streams/*", "skein/streams/r/x/", true},
		{"skein/streams/*", "skein/other/", false}, {"arn:aws:s3:::b/*", "arn:aws:s3:::b", false},
		{"*a*b*", "xaybz", true}, {"abc", "abcd", false},
	} {
		if got := wildcardMatch(c.p, c.s); got != c.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

// templateRole resolves a role of template.yaml as the IAM test does.
func templateRole(t *testing.T, role string) iamPolicy {
	t.Helper()
	tmpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, props, err := tmpl.Resource(role, &lambdaemu.ResolveOptions{Attributes: map[string]string{
		"EventTable.Arn": testARNs.Table("events"), "DataBucket.Arn": testARNs.Bucket("data"),
		"WorkQueue.Arn": "arn:aws:sqs:us-east-1:000000000000:work",
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rolePolicy(props)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTemplateRoles(t *testing.T) {
	wh := templateRole(t, "WebhookFunctionRole")
	flow := templateRole(t, "FlowFunctionRole")
	table := testARNs.Table("events")
	for _, c := range []struct {
		p    iamPolicy
		r    iamRequest
		want bool
	}{
		// The webhook reads the token's claim and the run's partition, without an index or a batch.
		{wh, iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs1", Context: leading("run")}, false},
		{wh, iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs9"}, false},
		{wh, iamRequest{Action: "dynamodb:BatchGetItem", Resource: table}, false},
		{wh, iamRequest{Action: "dynamodb:Query", Resource: table, Context: leading("r#wrun_1")}, true},
		{wh, iamRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("t#abc")}, true},
		{wh, iamRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("r#wrun_1")}, true},
		{wh, iamRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("h#hook_1")}, false},
		{wh, iamRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("i#abc")}, false},
		// It writes nothing of the table: the flow function commits what it queues (issue 18, item 9).
		{wh, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("r#wrun_1")}, false},
		{wh, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("q#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:UpdateItem", Resource: table, Context: leading("q#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("q#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("t#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("h#hook_1")}, false},
		{wh, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("i#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:UpdateItem", Resource: table, Context: leading("r#wrun_1")}, false},
		{wh, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("r#wrun_1")}, false},
		{wh, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("t#abc")}, false},
		{wh, iamRequest{Action: "dynamodb:ConditionCheckItem", Resource: table, Context: leading("r#wrun_1")}, false},
		{wh, iamRequest{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:000000000000:work"}, true},
		{wh, iamRequest{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:us-east-1:000000000000:work"}, false},
		// S3: it puts large requests in the inbox, reads claim-checked payloads and reply streams.
		{wh, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, true},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, false},
		{wh, iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, false},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/blobs/wrun_1/x"}, true},
		{wh, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/blobs/wrun_1/x"}, false},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/streams/wrun_1/s/0"}, true},
		{wh, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/streams/wrun_1/s/0"}, false},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/x"}, false},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/other/x"}, false},
		{wh, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::other/skein/blobs/x"}, false},
		{wh, iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::data/skein/blobs/x"}, false},
		{wh, iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data", Context: map[string]string{"s3:prefix": "skein/streams/r/s/"}}, true},
		{wh, iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data", Context: map[string]string{"s3:prefix": "skein/claims/"}}, false},
		{wh, iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data"}, false},
		// The flow function: skein/ prefixes only, the inbox read and deleted, not written.
		{flow, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/blobs/wrun_1/x"}, true},
		{flow, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/streams/wrun_1/s/0"}, true},
		{flow, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/other/x"}, false},
		{flow, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/other/x"}, false},
		{flow, iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, true},
		{flow, iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, true},
		{flow, iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, false},
		// It deletes in the partitions it ends things in, never a run's idempotency key.
		{flow, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("r#wrun_1")}, true},
		{flow, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("q#abc")}, true},
		{flow, iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("i#abc")}, false},
		{flow, iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data", Context: map[string]string{"s3:prefix": "skein/streams/r/"}}, true},
		{flow, iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data"}, false},
		{flow, iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::data/skein/x"}, false},
		{flow, iamRequest{Action: "dynamodb:ConditionCheckItem", Resource: table}, true},
		{flow, iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("i#abc")}, true},
		{flow, iamRequest{Action: "dynamodb:TransactWriteItems", Resource: table}, false},
		// Runs by attribute: the flow function lists through gs4; the webhook reads no index.
		{flow, iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs4"}, true},
		{wh, iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs4"}, false},
	} {
		if got, _ := c.p.Allowed(c.r); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.r, got, c.want)
		}
	}
}

func leading(pk string) map[string]string { return map[string]string{"dynamodb:LeadingKeys": pk} }

func TestSetConditions(t *testing.T) {
	t.Parallel()
	p, err := parsePolicy(map[string]any{"Statement": []any{
		map[string]any{"Sid": "All", "Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "*",
			"Condition": map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"r#*", "t#*"}}}},
		map[string]any{"Sid": "Any", "Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "*",
			"Condition": map[string]any{"ForAnyValue:StringEquals": map[string]any{"dynamodb:LeadingKeys": "q#1"}}},
		map[string]any{"Sid": "Odd", "Effect": "Allow", "Action": "dynamodb:Query", "Resource": "*",
			"Condition": map[string]any{"ForSomeValues:StringLike": map[string]any{"dynamodb:LeadingKeys": "*"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    iamRequest
		want bool
	}{
		{iamRequest{Action: "dynamodb:GetItem", Resource: "x", Context: leading("r#1")}, true},
		{iamRequest{Action: "dynamodb:GetItem", Resource: "x", Context: leading("i#1")}, false},
		{iamRequest{Action: "dynamodb:GetItem", Resource: "x"}, true}, // ForAllValues of no value holds
		{iamRequest{Action: "dynamodb:PutItem", Resource: "x", Context: leading("q#1")}, true},
		{iamRequest{Action: "dynamodb:PutItem", Resource: "x", Context: leading("q#2")}, false},
		{iamRequest{Action: "dynamodb:PutItem", Resource: "x"}, false}, // ForAnyValue of no value does not
		{iamRequest{Action: "dynamodb:Query", Resource: "x", Context: leading("r#1")}, false},
	} {
		if got, _ := p.Allowed(c.r); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.r, got, c.want)
		}
	}
}

func TestPolicyDenyWins(t *testing.T) {
	p, err := parsePolicy(map[string]any{"Statement": []any{
		map[string]any{"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
		map[string]any{"Sid": "No", "Effect": "Deny", "Action": []any{"s3:DeleteObject"}, "Resource": "arn:aws:s3:::b/*"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, sid := p.Allowed(iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::b/k"}); ok || sid != "No" {
		t.Errorf("delete: %v %s", ok, sid)
	}
	if ok, _ := p.Allowed(iamRequest{Action: "S3:GetObject", Resource: "arn:aws:s3:::b/k"}); !ok {
		t.Error("get refused")
	}
	if _, err := parsePolicy(map[string]any{"Statement": map[string]any{"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"}}); err == nil {
		t.Error("NotAction accepted")
	}
}

func TestDecodeDynamoDB(t *testing.T) {
	table := testARNs.Table("events")
	for _, c := range []struct {
		target, body string
		want         []iamRequest
	}{
		{"DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"events"}},{"Update":{"TableName":"events"}},{"ConditionCheck":{"TableName":"events"}},{"Delete":{"TableName":"events"}}]}`,
			[]iamRequest{{Action: "dynamodb:PutItem", Resource: table}, {Action: "dynamodb:UpdateItem", Resource: table},
				{Action: "dynamodb:ConditionCheckItem", Resource: table}, {Action: "dynamodb:DeleteItem", Resource: table}}},
		{"DynamoDB_20120810.TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"events"}}]}`, []iamRequest{{Action: "dynamodb:GetItem", Resource: table}}},
		{"DynamoDB_20120810.Query", `{"TableName":"events","IndexName":"gs2"}`, []iamRequest{{Action: "dynamodb:Query", Resource: table + "/index/gs2"}}},
		{"DynamoDB_20120810.GetItem", `{"TableName":"events"}`, []iamRequest{{Action: "dynamodb:GetItem", Resource: table}}},
		{"DynamoDB_20120810.BatchGetItem", `{"RequestItems":{"events":{}}}`, []iamRequest{{Action: "dynamodb:BatchGetItem", Resource: table}}},
		{"DynamoDB_20120810.ListTables", `{}`, []iamRequest{{Action: "dynamodb:ListTables", Resource: "*"}}},
		// Partition key values, as dynamodb:LeadingKeys.
		{"DynamoDB_20120810.GetItem", `{"TableName":"events","Key":{"pk":{"S":"t#ab"},"sk":{"S":"tok"}}}`,
			[]iamRequest{{Action: "dynamodb:GetItem", Resource: table, Context: leading("t#ab")}}},
		{"DynamoDB_20120810.PutItem", `{"TableName":"events","Item":{"pk":{"S":"q#cd"},"sk":{"S":"q"},"n":{"N":"1"}}}`,
			[]iamRequest{{Action: "dynamodb:PutItem", Resource: table, Context: leading("q#cd")}}},
		{"DynamoDB_20120810.Query", `{"TableName":"events","KeyConditionExpression":"#0 = :0 AND #1 BETWEEN :1 AND :2",` +
			`"ExpressionAttributeNames":{"#0":"pk","#1":"sk"},"ExpressionAttributeValues":{":0":{"S":"r#wrun_1"},":1":{"S":"e#"},":2":{"S":"e~b"}}}`,
			[]iamRequest{{Action: "dynamodb:Query", Resource: table, Context: leading("r#wrun_1")}}},
		{"DynamoDB_20120810.Query", `{"TableName":"events","KeyConditionExpression":"#s = :s AND #p = :p",` +
			`"ExpressionAttributeNames":{"#p":"pk","#s":"sk"},"ExpressionAttributeValues":{":p":{"S":"r#wrun_2"},":s":{"S":"e~"}}}`,
			[]iamRequest{{Action: "dynamodb:Query", Resource: table, Context: leading("r#wrun_2")}}},
		{"DynamoDB_20120810.Query", `{"TableName":"events","IndexName":"gs1","KeyConditionExpression":"#g = :g",` +
			`"ExpressionAttributeNames":{"#g":"g1"},"ExpressionAttributeValues":{":g":{"S":"run"}}}`,
			[]iamRequest{{Action: "dynamodb:Query", Resource: table + "/index/gs1", Context: leading("run")}}},
		{"DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"events","Item":{"pk":{"S":"r#1"}}}},{"Delete":{"TableName":"events","Key":{"pk":{"S":"t#2"}}}}]}`,
			[]iamRequest{{Action: "dynamodb:PutItem", Resource: table, Context: leading("r#1")}, {Action: "dynamodb:DeleteItem", Resource: table, Context: leading("t#2")}}},
		{"DynamoDB_20120810.BatchGetItem", `{"RequestItems":{"events":{"Keys":[{"pk":{"S":"r#1"}},{"pk":{"S":"r#2"}},{"pk":{"S":"r#1"}}]}}}`,
			[]iamRequest{{Action: "dynamodb:BatchGetItem", Resource: table, Context: leading("r#1")}, {Action: "dynamodb:BatchGetItem", Resource: table, Context: leading("r#2")}}},
		{"DynamoDB_20120810.BatchWriteItem", `{"RequestItems":{"events":[{"PutRequest":{"Item":{"pk":{"S":"q#1"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"h#2"}}}}]}}`,
			[]iamRequest{{Action: "dynamodb:BatchWriteItem", Resource: table, Context: leading("q#1")}, {Action: "dynamodb:BatchWriteItem", Resource: table, Context: leading("h#2")}}},
	} {
		got, err := decodeDynamoDB(testARNs, c.target, []byte(c.body))
		if err != nil || !slices.EqualFunc(got, c.want, sameRequest) {
			t.Errorf("%s %s: %v, %v", c.target, c.body, got, err)
		}
	}
	if _, err := decodeDynamoDB(testARNs, "DynamoDB_20120810.TransactWriteItems", []byte(`{"TransactItems":[{"Frob":{}}]}`)); err == nil {
		t.Error("unknown transaction operation accepted")
	}
}

func sameRequest(a, b iamRequest) bool { return a.String() == b.String() }

func TestDecodeSQS(t *testing.T) {
	q := "arn:aws:sqs:us-east-1:000000000000:work"
	got, err := decodeSQS(testARNs, "AmazonSQS.DeleteMessageBatch", "application/x-amz-json-1.0", []byte(`{"QueueUrl":"http://q/000000000000/work"}`))
	if err != nil || !slices.EqualFunc(got, []iamRequest{{Action: "sqs:DeleteMessage", Resource: q}}, sameRequest) {
		t.Errorf("JSON: %v, %v", got, err)
	}
	got, err = decodeSQS(testARNs, "", "application/x-www-form-urlencoded; charset=utf-8", []byte("Action=SendMessage&QueueUrl=http%3A%2F%2Fq%2F000000000000%2Fwork"))
	if err != nil || !slices.EqualFunc(got, []iamRequest{{Action: "sqs:SendMessage", Resource: q}}, sameRequest) {
		t.Errorf("query: %v, %v", got, err)
	}
	got, err = decodeSQS(testARNs, "AmazonSQS.SendMessage", "", []byte(`{"QueueUrl":"http://elsewhere/q"}`))
	if err != nil || got[0].Resource == q {
		t.Errorf("unknown queue: %v, %v", got, err)
	}
}

func TestDecodeS3(t *testing.T) {
	b := "arn:aws:s3:::data"
	for _, c := range []struct {
		method, path, query, body string
		want                      []iamRequest
	}{
		{"GET", "/data", "list-type=2&prefix=skein%2Fstreams%2Fr%2F", "", []iamRequest{{Action: "s3:ListBucket", Resource: b, Context: map[string]string{"s3:prefix": "skein/streams/r/"}}}},
		{"GET", "/data/skein/streams/r/0", "x-id=GetObject", "", []iamRequest{{Action: "s3:GetObject", Resource: b + "/skein/streams/r/0"}}},
		{"HEAD", "/data/skein/a%20b", "", "", []iamRequest{{Action: "s3:GetObject", Resource: b + "/skein/a b"}}},
		{"PUT", "/data/k", "x-id=PutObject", "", []iamRequest{{Action: "s3:PutObject", Resource: b + "/k"}}},
		{"HEAD", "/data", "", "", []iamRequest{{Action: "s3:ListBucket", Resource: b}}},
		{"DELETE", "/data/k", "x-id=DeleteObject", "", []iamRequest{{Action: "s3:DeleteObject", Resource: b + "/k"}}},
		{"POST", "/data", "delete=", `<Delete><Object><Key>a</Key></Object><Object><Key>b/c</Key></Object></Delete>`,
			[]iamRequest{{Action: "s3:DeleteObject", Resource: b + "/a"}, {Action: "s3:DeleteObject", Resource: b + "/b/c"}}},
	} {
		q, _ := url.ParseQuery(c.query)
		got, err := decodeS3(testARNs, c.method, c.path, q, nil, []byte(c.body))
		if err != nil || !slices.EqualFunc(got, c.want, sameRequest) {
			t.Errorf("%s %s?%s: %v, %v", c.method, c.path, c.query, got, err)
		}
	}
	q, _ := url.ParseQuery("acl=")
	if _, err := decodeS3(testARNs, "PUT", "/data/k", q, nil, nil); err == nil {
		t.Error("PutObjectAcl decoded as something known")
	}
}

// TestWebhookReservedConcurrency: the public webhook function reserves (and
// is capped at) WebhookReservedConcurrency executions, 10 by default; -1
// leaves the property out.
func TestWebhookReservedConcurrency(t *testing.T) {
	t.Parallel()
	tmpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		param string
		want  any
	}{{"", 10}, {"3", 3}, {"-1", nil}} {
		opts := &lambdaemu.ResolveOptions{}
		if c.param != "" {
			opts.Parameters = map[string]string{"WebhookReservedConcurrency": c.param}
		}
		_, props, err := tmpl.Resource("WebhookFunction", opts)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := props["ReservedConcurrentExecutions"]
		if c.want == nil {
			if ok {
				t.Errorf("WebhookReservedConcurrency=%s: ReservedConcurrentExecutions %v, want none", c.param, got)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("WebhookReservedConcurrency=%q: ReservedConcurrentExecutions %v (%T), want %v", c.param, got, got, c.want)
		}
	}
}
