package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/internal/schedmsg"
)

const (
	workQueueARN = "arn:aws:sqs:us-east-1:000000000000:work"
	deadQueueARN = "arn:aws:sqs:us-east-1:000000000000:dead"
	scheduleARN  = "arn:aws:scheduler:us-east-1:000000000000:schedule/default/skein-Schedule-ABC"
)

var scheduleParams = map[string]string{
	"ScheduleExpression": "cron(0 8 ? * MON-FRI *)", "ScheduleTimeZone": "Europe/Paris",
	"ScheduleWorkflow": "report", "ScheduleInput": `{"day":1}`,
}

func scheduleResolve() *lambdaemu.ResolveOptions {
	return &lambdaemu.ResolveOptions{Parameters: scheduleParams, Attributes: map[string]string{
		"WorkQueue.Arn": workQueueARN, "DeadLetterQueue.Arn": deadQueueARN, "ScheduleRole.Arn": "arn:aws:iam::000000000000:role/schedule",
	}}
}

// fillScheduler fills in the placeholders of a schedule's target input as
// EventBridge Scheduler does when it sends it.
func fillScheduler(input, arn, at string) string {
	return strings.NewReplacer("<aws.scheduler.schedule-arn>", arn, "<aws.scheduler.scheduled-time>", at).Replace(input)
}

// TestScheduleTemplate: the optional schedule exists only with a
// ScheduleExpression; it targets the work queue with a schedule message the
// flow function decodes into the firing; its role may send to the work
// queue and do nothing else.
func TestScheduleTemplate(t *testing.T) {
	tmpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Schedule", "ScheduleRole"} {
		if c := tmpl.ResourceCondition(id); c != "HasSchedule" {
			t.Errorf("%s: Condition %q, want HasSchedule", id, c)
		}
	}
	if on, err := tmpl.Condition("HasSchedule", nil); err != nil || on {
		t.Errorf("HasSchedule by default: %v, %v; want false", on, err)
	}
	if on, err := tmpl.Condition("HasSchedule", scheduleResolve()); err != nil || !on {
		t.Errorf("HasSchedule with an expression: %v, %v; want true", on, err)
	}

	typ, props, err := tmpl.Resource("Schedule", scheduleResolve())
	if err != nil || typ != "AWS::Scheduler::Schedule" {
		t.Fatalf("Schedule: %s, %v", typ, err)
	}
	if props["ScheduleExpression"] != scheduleParams["ScheduleExpression"] || props["ScheduleExpressionTimezone"] != "Europe/Paris" {
		t.Errorf("Schedule: expression %v in %v", props["ScheduleExpression"], props["ScheduleExpressionTimezone"])
	}
	target, _ := props["Target"].(map[string]any)
	if target["Arn"] != workQueueARN || target["RoleArn"] != "arn:aws:iam::000000000000:role/schedule" {
		t.Errorf("Schedule target %v", target)
	}
	input, _ := target["Input"].(string)
	f, err := schedmsg.DecodeMessage([]byte(fillScheduler(input, scheduleARN, "2026-11-24T07:00:00Z")))
	if err != nil {
		t.Fatalf("the schedule's message %s: %v", input, err)
	}
	if f.Name != "skein-Schedule-ABC" || f.Workflow != "report" || string(f.Input) != `{"day":1}` || f.Key() != "schedule:skein-Schedule-ABC:2026-11-24T07:00:00Z" {
		t.Errorf("firing %+v", f)
	}

	typ, rprops, err := tmpl.Resource("ScheduleRole", scheduleResolve())
	if err != nil || typ != "AWS::IAM::Role" {
		t.Fatalf("ScheduleRole: %s, %v", typ, err)
	}
	trust, _ := json.Marshal(rprops["AssumeRolePolicyDocument"])
	if !strings.Contains(string(trust), `"Service":"scheduler.amazonaws.com"`) {
		t.Errorf("ScheduleRole trust policy %s", trust)
	}
	role, err := rolePolicy(rprops)
	if err != nil {
		t.Fatal(err)
	}
	if got := role.Actions(); !slices.Equal(got, []string{"sqs:SendMessage"}) {
		t.Errorf("ScheduleRole allows %v, want sqs:SendMessage only", got)
	}
	// The request EventBridge Scheduler makes, as the IAM test decodes SQS requests.
	arns := iamARNs{Region: "us-east-1", Account: "000000000000", Queues: map[string]string{"http://q/000000000000/work": workQueueARN}}
	sent, err := decodeSQS(arns, "AmazonSQS.SendMessage", "application/x-amz-json-1.0", []byte(`{"QueueUrl":"http://q/000000000000/work","MessageBody":"{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    iamRequest
		want bool
	}{
		{sent[0], true},
		{iamRequest{Action: "sqs:SendMessage", Resource: deadQueueARN}, false},
		{iamRequest{Action: "sqs:ReceiveMessage", Resource: workQueueARN}, false},
		{iamRequest{Action: "sqs:DeleteMessage", Resource: workQueueARN}, false},
		{iamRequest{Action: "kms:GenerateDataKey", Resource: "*"}, false},
		{iamRequest{Action: "dynamodb:PutItem", Resource: "arn:aws:dynamodb:us-east-1:000000000000:table/events"}, false},
	} {
		if got, _ := role.Allowed(c.r); got != c.want {
			t.Errorf("ScheduleRole: %s allowed %v, want %v", c.r, got, c.want)
		}
	}
}

// TestScheduleParameters: a schedule expression that is not EventBridge
// Scheduler's rate() or six-field cron(), or a workflow name that would
// break the message's JSON, is refused at deploy by the parameters'
// patterns.
func TestScheduleParameters(t *testing.T) {
	tmpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		param, value string
		ok           bool
	}{
		{"ScheduleExpression", "", true},
		{"ScheduleExpression", "rate(1 hour)", true},
		{"ScheduleExpression", "rate(15 minutes)", true},
		{"ScheduleExpression", "cron(0 8 ? * MON-FRI *)", true},
		{"ScheduleExpression", "cron(0 8 * *)", false},
		{"ScheduleExpression", "0 8 * * *", false},
		{"ScheduleExpression", "rate(0 minutes)", false},
		{"ScheduleExpression", "rate(5 weeks)", false},
		{"ScheduleExpression", "@every 5m", false},
		{"ScheduleWorkflow", "report", true},
		{"ScheduleWorkflow", `re"port`, false},
		{"ScheduleWorkflow", `re\port`, false},
		{"ScheduleTimeZone", "America/Argentina/Buenos_Aires", true},
		{"ScheduleTimeZone", "Paris time", false},
	} {
		_, err := tmpl.Parameter(c.param, &lambdaemu.ResolveOptions{Parameters: map[string]string{c.param: c.value}})
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: %v, want accepted %v", c.param, c.value, err, c.ok)
		}
	}
}
