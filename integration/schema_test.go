package integration

// This file has no build tag: it needs no emulator and runs with every
// `go test ./...`.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/lambdaemu"
)

// tableSchema is what the template's EventTable and dynamoworld.CreateTable
// must agree on. CloudFormation's AWS::DynamoDB::Table properties and
// DynamoDB's CreateTable and UpdateTimeToLive requests use the same field
// names, so both decode into it from JSON.
type tableSchema struct {
	BillingMode          string
	AttributeDefinitions []schemaAttribute
	KeySchema            []schemaKey
	// GlobalSecondaryIndexes is sorted by name; LocalSecondaryIndexes must
	// stay empty on both sides.
	GlobalSecondaryIndexes []schemaIndex
	LocalSecondaryIndexes  []schemaIndex
	TTL                    schemaTTL `json:"TimeToLiveSpecification"`
}

type schemaAttribute struct{ AttributeName, AttributeType string }

type schemaKey struct{ AttributeName, KeyType string }

type schemaIndex struct {
	IndexName  string
	KeySchema  []schemaKey
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
}

type schemaTTL struct {
	AttributeName string
	Enabled       bool
}

// normalize sorts what has no order (attribute definitions, indexes,
// projected attributes); key schemas keep theirs (HASH, then RANGE).
func (s *tableSchema) normalize() {
	slices.SortFunc(s.AttributeDefinitions, func(a, b schemaAttribute) int { return strings.Compare(a.AttributeName, b.AttributeName) })
	slices.SortFunc(s.GlobalSecondaryIndexes, func(a, b schemaIndex) int { return strings.Compare(a.IndexName, b.IndexName) })
	for i := range s.GlobalSecondaryIndexes {
		slices.Sort(s.GlobalSecondaryIndexes[i].Projection.NonKeyAttributes)
	}
}

func (s tableSchema) String() string {
	b, _ := json.MarshalIndent(s, "", "  ")
	return string(b)
}

// templateSchema reads the EventTable of template.yaml with lambdaemu's
// template reader.
func templateSchema(t *testing.T) tableSchema {
	t.Helper()
	tmpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typ, props, err := tmpl.Resource("EventTable", nil)
	if err != nil {
		t.Fatal(err)
	}
	if typ != "AWS::DynamoDB::Table" {
		t.Fatalf("EventTable is a %s", typ)
	}
	raw, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	var s tableSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("EventTable properties: %v", err)
	}
	s.normalize()
	return s
}

// ddbRecorder is an HTTP transport that plays DynamoDB for CreateTable:
// it records each request's body by operation and answers as a table that
// becomes active at once (and takes the item of its schema version).
type ddbRecorder struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (r *ddbRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.bodies[op] = append(r.bodies[op], body)
	r.mu.Unlock()
	var in struct{ TableName string }
	_ = json.Unmarshal(body, &in)
	var out string
	switch op {
	case "CreateTable":
		out = fmt.Sprintf(`{"TableDescription":{"TableName":%q,"TableStatus":"CREATING"}}`, in.TableName)
	case "DescribeTable":
		out = fmt.Sprintf(`{"Table":{"TableName":%q,"TableStatus":"ACTIVE"}}`, in.TableName)
	case "PutItem": // the table's schema version
		out = `{}`
	case "UpdateTimeToLive":
		var ttl struct{ TimeToLiveSpecification json.RawMessage }
		_ = json.Unmarshal(body, &ttl)
		out = fmt.Sprintf(`{"TimeToLiveSpecification":%s}`, ttl.TimeToLiveSpecification)
	default:
		return nil, fmt.Errorf("ddbRecorder: unexpected operation %q", op)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(out))), 10))
	h.Set("X-Amzn-Requestid", "schema-test")
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Body: io.NopCloser(bytes.NewReader([]byte(out))),
		ContentLength: int64(len(out)), Request: req}, nil
}

// createTableSchema runs dynamoworld.CreateTable against ddbRecorder and
// decodes the table it asked for: the CreateTable request, plus the TTL of
// its UpdateTimeToLive request.
func createTableSchema(t *testing.T) tableSchema {
	t.Helper()
	rec := &ddbRecorder{bodies: map[string][][]byte{}}
	ddb := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://dynamodb.schema-test.invalid"),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "schema-test"}, nil
		}),
		HTTPClient: &http.Client{Transport: rec},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dynamoworld.CreateTable(ctx, ddb, "schema-test"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies["CreateTable"]) != 1 || len(rec.bodies["UpdateTimeToLive"]) != 1 {
		t.Fatalf("CreateTable sent %d CreateTable and %d UpdateTimeToLive requests, want 1 and 1",
			len(rec.bodies["CreateTable"]), len(rec.bodies["UpdateTimeToLive"]))
	}
	var s tableSchema
	if err := json.Unmarshal(rec.bodies["CreateTable"][0], &s); err != nil {
		t.Fatalf("CreateTable request: %v", err)
	}
	var ttl struct{ TimeToLiveSpecification schemaTTL }
	if err := json.Unmarshal(rec.bodies["UpdateTimeToLive"][0], &ttl); err != nil {
		t.Fatalf("UpdateTimeToLive request: %v", err)
	}
	s.TTL = ttl.TimeToLiveSpecification
	s.normalize()
	return s
}

// TestEventTableSchema: the table template.yaml declares is the one
// dynamoworld.CreateTable creates (what the tests and `skein` development
// stacks run on): key schema, attribute definitions, GSIs with their keys
// and projections, billing mode and TTL attribute. dynamoworld exports no
// schema value, so the test records the requests CreateTable sends to a
// fake DynamoDB and compares them with the template; both are also checked
// against the layout dynamoworld documents (dynamoworld/keys.go,
// resources.go), so that a change on one side fails here until the other
// follows.
func TestEventTableSchema(t *testing.T) {
	tmpl := templateSchema(t)
	created := createTableSchema(t)

	keys := func(pk, sk string) []schemaKey {
		return []schemaKey{{pk, "HASH"}, {sk, "RANGE"}}
	}
	want := tableSchema{
		BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []schemaAttribute{
			{"g1", "S"}, {"g2", "S"}, {"g3", "S"}, {"g4", "S"}, {"gsk", "S"}, {"pk", "S"}, {"sk", "S"},
		},
		KeySchema: keys("pk", "sk"),
		TTL:       schemaTTL{AttributeName: "ttl", Enabled: true},
	}
	for _, ix := range []struct {
		name, pk, projection string
		nonKey               []string
	}{
		{"gs1", "g1", "KEYS_ONLY", nil},
		{"gs2", "g2", "INCLUDE", []string{"st"}},
		{"gs3", "g3", "KEYS_ONLY", nil},
		{"gs4", "g4", "KEYS_ONLY", nil},
	} {
		gsi := schemaIndex{IndexName: ix.name, KeySchema: keys(ix.pk, "gsk")}
		gsi.Projection.ProjectionType = ix.projection
		gsi.Projection.NonKeyAttributes = ix.nonKey
		want.GlobalSecondaryIndexes = append(want.GlobalSecondaryIndexes, gsi)
	}

	if !reflect.DeepEqual(tmpl, created) {
		t.Errorf("template.yaml's EventTable and dynamoworld.CreateTable differ:\ntemplate.yaml:\n%s\ndynamoworld.CreateTable:\n%s", tmpl, created)
	}
	for _, c := range []struct {
		name string
		got  tableSchema
	}{{"template.yaml", tmpl}, {"dynamoworld.CreateTable", created}} {
		if !reflect.DeepEqual(c.got, want) {
			t.Errorf("%s's table is not dynamoworld's layout:\ngot:\n%s\nwant:\n%s", c.name, c.got, want)
		}
	}
}
