package lambdaemu

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const repoTemplate = "../../template.yaml"

// The physical names a test gives the template's resources.
func testResources() map[string]string {
	return map[string]string{
		"EventTable": "skein-test-events",
		"WorkQueue":  "http://127.0.0.1:9324/000000000000/skein-test",
		"DataBucket": "skein-test-data",
	}
}

func TestReadMappingFromRepositoryTemplate(t *testing.T) {
	t.Parallel()
	m, err := ReadMapping(repoTemplate, &MappingOptions{ResolveOptions: ResolveOptions{Resources: testResources()}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("FunctionID", m.FunctionID, "FlowFunction")
	check("QueueID", m.QueueID, "WorkQueue")
	check("Enabled", m.Enabled, true)
	check("BatchSize", m.BatchSize, 10)
	check("MaximumBatchingWindow", m.MaximumBatchingWindow, time.Duration(0))
	check("ReportBatchItemFailures", m.ReportBatchItemFailures(), true)
	check("MaximumConcurrency", m.MaximumConcurrency, 10)
	check("Function.Timeout", m.Function.Timeout, 60*time.Second)
	check("Function.MemorySize", m.Function.MemorySize, 1024)
	check("Function.Runtime", m.Function.Runtime, "provided.al2023")
	check("Function.Handler", m.Function.Handler, "bootstrap")
	check("Function.LogFormat", m.Function.LogFormat, "JSON")
	check("Function.Architectures", strings.Join(m.Function.Architectures, ","), "arm64")
	check("Queue.VisibilityTimeout", m.Queue.VisibilityTimeout, 390*time.Second)
	check("Queue.Delay", m.Queue.Delay, time.Duration(0))
	if m.Queue.Redrive == nil {
		t.Fatal("no redrive policy")
	}
	check("Redrive.DeadLetterID", m.Queue.Redrive.DeadLetterID, "DeadLetterQueue")
	check("Redrive.MaxReceiveCount", m.Queue.Redrive.MaxReceiveCount, 5)
	check("DLQ retention", m.Queue.Redrive.DeadLetter.MessageRetention, 14*24*time.Hour)
	if len(m.Unresolved) != 0 {
		t.Errorf("Unresolved = %v, want none", m.Unresolved)
	}
	wantEnv := map[string]string{
		"SKEIN_HANDLER":               "flow",
		"SKEIN_TABLE":                 "skein-test-events",
		"SKEIN_QUEUE_URL":             "http://127.0.0.1:9324/000000000000/skein-test",
		"SKEIN_BUCKET":                "skein-test-data",
		"SKEIN_INLINE_CONCURRENCY":    "16",
		"SKEIN_TIME_BUDGET_MARGIN":    "10s",
		"SKEIN_METRICS_NAMESPACE":     "Skein",
		"SKEIN_KMS_KEY_ID":            "",
		"SKEIN_MAX_QUEUE_DELAY":       "15m",
		"SKEIN_CLAIM_CHECK_THRESHOLD": "65536",
		"SKEIN_RETENTION_DAYS":        "0",
		"SKEIN_VERSION":               "",
		"SKEIN_VERSIONS":              "",
	}
	for k, v := range wantEnv {
		check("Env["+k+"]", m.Function.Env[k], v)
	}
	if len(m.Function.Env) != len(wantEnv) {
		t.Errorf("Env = %v, want exactly %v", m.Function.Env, wantEnv)
	}

	fc := m.FunctionConfig("/bin/true")
	check("FunctionConfig.Name", fc.Name, "FlowFunction")
	check("FunctionConfig.Timeout", fc.Timeout, 60*time.Second)
	check("FunctionConfig.Env[SKEIN_TABLE]", fc.Env["SKEIN_TABLE"], "skein-test-events")
}

func TestMappingListsUnresolvedResources(t *testing.T) {
	t.Parallel()
	m, err := ReadMapping(repoTemplate, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DataBucket", "EventTable", "WorkQueue"}
	if !slices.Equal(m.Unresolved, want) {
		t.Fatalf("Unresolved = %v, want %v", m.Unresolved, want)
	}
	if m.Function.Env["SKEIN_TABLE"] != "EventTable" {
		t.Fatalf("an unresolved Ref resolves to its logical ID, got %q", m.Function.Env["SKEIN_TABLE"])
	}
}

// AWS: the source queue's visibility timeout must be at least six times the function timeout (plus
// the batching window). The template derives it through a mapping; check every allowed timeout.
func TestVisibilityTimeoutRuleHoldsForEveryAllowedTimeout(t *testing.T) {
	t.Parallel()
	tpl, err := ReadTemplate(repoTemplate)
	if err != nil {
		t.Fatal(err)
	}
	timeouts := tpl.AllowedValues("FunctionTimeout")
	if len(timeouts) == 0 {
		t.Fatal("FunctionTimeout has no AllowedValues")
	}
	_, windowParam, err := tpl.parameterDefinition("MaximumBatchingWindowInSeconds")
	if err != nil {
		t.Fatal(err)
	}
	maxWindow, err := strconv.Atoi(scalarString(windowParam["MaxValue"]))
	if err != nil {
		t.Fatalf("MaximumBatchingWindowInSeconds needs a MaxValue: %v", err)
	}
	for _, to := range timeouts {
		m, err := tpl.Mapping(&MappingOptions{ResolveOptions: ResolveOptions{
			Parameters: map[string]string{"FunctionTimeout": to, "MaximumBatchingWindowInSeconds": strconv.Itoa(maxWindow)},
		}})
		if err != nil {
			t.Fatalf("FunctionTimeout=%s: %v", to, err)
		}
		need := 6*m.Function.Timeout + time.Duration(maxWindow)*time.Second
		if m.Queue.VisibilityTimeout < need {
			t.Errorf("FunctionTimeout=%s: VisibilityTimeout %s < 6 x timeout + window = %s", to, m.Queue.VisibilityTimeout, need)
		}
		if m.Queue.VisibilityTimeout > 12*time.Hour {
			t.Errorf("FunctionTimeout=%s: VisibilityTimeout %s exceeds SQS's 12 h", to, m.Queue.VisibilityTimeout)
		}
	}
}

func TestParameterOverrides(t *testing.T) {
	t.Parallel()
	tpl, err := ReadTemplate(repoTemplate)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tpl.Mapping(&MappingOptions{ResolveOptions: ResolveOptions{Parameters: map[string]string{
		"FunctionTimeout": "300", "MaxReceiveCount": "3", "BatchSize": "4", "MaximumConcurrency": "2",
		"MaxQueueDelay": "1m30s",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Function.Timeout != 300*time.Second || m.Queue.VisibilityTimeout != 1830*time.Second ||
		m.Queue.Redrive.MaxReceiveCount != 3 || m.BatchSize != 4 || m.MaximumConcurrency != 2 ||
		m.Function.Env["SKEIN_MAX_QUEUE_DELAY"] != "1m30s" {
		t.Fatalf("overrides not applied: %+v", m)
	}
	for _, bad := range []map[string]string{
		{"FunctionTimeout": "45"},       // not an AllowedValue
		{"BatchSize": "11"},             // above MaxValue
		{"MaximumConcurrency": "1"},     // below MinValue
		{"TimeBudgetMargin": "ten"},     // AllowedPattern
		{"NoSuchParameter": "1"},        // unknown
		{"FunctionMemorySize": "a lot"}, // not a number
		{"MaximumBatchingWindowInSeconds": "31"},
		{"MaxQueueDelay": "16m"}, // above SQS's 15m
	} {
		if _, err := tpl.Mapping(&MappingOptions{ResolveOptions: ResolveOptions{Parameters: bad}}); err == nil {
			t.Errorf("override %v accepted", bad)
		}
	}
}

// The flow function reads MaxQueueDelay as SKEIN_MAX_QUEUE_DELAY, a Go duration that SQS caps at 15m
// and rounds up to whole seconds: the parameter's AllowedPattern accepts the ways to write each whole
// second from 1s to 15m, and nothing over 15m, under 1s or not a Go duration.
func TestMaxQueueDelayPattern(t *testing.T) {
	t.Parallel()
	tpl, err := ReadTemplate(repoTemplate)
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := tpl.parameterDefinition("MaxQueueDelay")
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(v string) bool { return checkParameter("MaxQueueDelay", p, v) == nil }
	for s := 1; s <= 900; s++ {
		d := time.Duration(s) * time.Second
		forms := []string{d.String(), strconv.Itoa(s) + "s"} // 1m30s (15m0s), 90s
		if s%60 == 0 {
			forms = append(forms, strconv.Itoa(s/60)+"m")
		}
		for _, v := range forms {
			if !accepts(v) {
				t.Errorf("MaxQueueDelay=%s (%s) rejected", v, d)
			}
		}
	}
	for _, v := range []string{"", "0s", "0m", "901s", "15m1s", "16m", "14m60s", "1h", "0.5s", "500ms", "15", "ten", "-1s", " 15m"} {
		if accepts(v) {
			t.Errorf("MaxQueueDelay=%q accepted", v)
		}
	}
	if def := scalarString(p["Default"]); !accepts(def) {
		t.Errorf("the default %q is rejected", def)
	}
	// Whatever it accepts, the function can parse, within SQS's limit.
	for s := 0; s <= 1000; s++ {
		for _, v := range []string{strconv.Itoa(s) + "s", strconv.Itoa(s/60) + "m" + strconv.Itoa(s%60) + "s", strconv.Itoa(s) + "m"} {
			if !accepts(v) {
				continue
			}
			if d, err := time.ParseDuration(v); err != nil || d <= 0 || d > 15*time.Minute {
				t.Errorf("MaxQueueDelay=%s accepted: %s, %v", v, d, err)
			}
		}
	}
}

const intrinsicsTemplate = `
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
  Names:
    Type: CommaDelimitedList
    Default: "a, b, c"
  Timeout:
    Type: Number
    Default: 20
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  NotProd: !Not [!Condition IsProd]
  Both: !And [!Condition NotProd, !Equals ["x", "x"]]
Mappings:
  Sizes:
    dev:
      Memory: 256
Globals:
  Function:
    Timeout: !Ref Timeout
    MemorySize: 128
    Environment:
      Variables:
        FROM_GLOBALS: yes-global
        OVERRIDDEN: global
x-common: &common
  SHARED: from-anchor
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 120
      DelaySeconds: 2
  Table:
    Type: AWS::DynamoDB::Table
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: !FindInMap [Sizes, !Ref Stage, Memory]
      Environment:
        Variables:
          <<: *common
          OVERRIDDEN: local
          SUB: !Sub "${AWS::StackName}-${Stage}-${Table}-${!Literal}"
          SUB_LIST: !Sub ["${Pre}/${Queue.Arn}", {Pre: !Join ["", [x, !Select [1, !Ref Names]]]}]
          SPLIT: !Select [2, !Split [",", "p,q,r"]]
          IF: !If [IsProd, prod-value, !Ref Stage]
          BOTH: !If [Both, "yes", "no"]
          GONE: !If [IsProd, here, !Ref AWS::NoValue]
          REGION: !Ref AWS::Region
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: !GetAtt Queue.Arn
      BatchSize: 7
      MaximumBatchingWindowInSeconds: 3
      Enabled: false
`

func TestIntrinsicsGlobalsAndExplicitMapping(t *testing.T) {
	t.Parallel()
	tpl, err := ParseTemplate([]byte(intrinsicsTemplate))
	if err != nil {
		t.Fatal(err)
	}
	m, err := tpl.Mapping(&MappingOptions{ResolveOptions: ResolveOptions{
		Resources:  map[string]string{"Table": "tbl"},
		Attributes: map[string]string{"Queue.Arn": "arn:aws:sqs:us-east-1:000000000000:q"},
		Region:     "eu-west-1",
		StackName:  "stk",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if m.FunctionID != "Fn" || m.QueueID != "Queue" || m.EventID != "Mapping" {
		t.Fatalf("ids: %s %s %s", m.FunctionID, m.QueueID, m.EventID)
	}
	if m.BatchSize != 7 || m.MaximumBatchingWindow != 3*time.Second || m.Enabled || m.ReportBatchItemFailures() {
		t.Fatalf("mapping: %+v", m)
	}
	if m.Function.Timeout != 20*time.Second || m.Function.MemorySize != 256 {
		t.Fatalf("function: timeout %s memory %d", m.Function.Timeout, m.Function.MemorySize)
	}
	if m.Queue.VisibilityTimeout != 120*time.Second || m.Queue.Delay != 2*time.Second || m.Queue.Redrive != nil {
		t.Fatalf("queue: %+v", m.Queue)
	}
	want := map[string]string{
		"FROM_GLOBALS": "yes-global",
		"OVERRIDDEN":   "local",
		"SHARED":       "from-anchor",
		"SUB":          "stk-dev-tbl-${Literal}",
		"SUB_LIST":     "xb/arn:aws:sqs:us-east-1:000000000000:q",
		"SPLIT":        "r",
		"IF":           "dev",
		"BOTH":         "yes",
		"REGION":       "eu-west-1",
	}
	for k, v := range want {
		if got := m.Function.Env[k]; got != v {
			t.Errorf("Env[%s] = %q, want %q", k, got, v)
		}
	}
	if _, ok := m.Function.Env["GONE"]; ok {
		t.Error("AWS::NoValue left the variable in place")
	}
	if len(m.Unresolved) != 0 {
		t.Errorf("Unresolved = %v", m.Unresolved)
	}

	prod, err := tpl.Mapping(&MappingOptions{ResolveOptions: ResolveOptions{Parameters: map[string]string{"Stage": "prod"}}})
	if err == nil {
		t.Fatalf("FindInMap with a missing key succeeded: %+v", prod.Function)
	}
}

func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"not yaml":     "a: [",
		"no resources": "Parameters: {}",
		"unknown ref": `
Resources:
  Q: {Type: AWS::SQS::Queue}
  F:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {X: !Ref Nope}}
      Events: {E: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}}`,
		"no sqs mapping": `
Resources:
  F: {Type: AWS::Serverless::Function}`,
		"two mappings": `
Resources:
  Q: {Type: AWS::SQS::Queue}
  F:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}
        B: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}`,
	} {
		tpl, err := ParseTemplate([]byte(src))
		if err == nil {
			_, err = tpl.Mapping(nil)
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
