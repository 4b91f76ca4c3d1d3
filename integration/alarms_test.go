package integration

// This file has no build tag: it needs no emulator.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/internal/lambdaio"
)

// TestTemplateAlarms: the flow function writes its metrics (EMF) to the
// namespace its alarms watch, with the dimension they name; the alarms
// watch the dead-letter queue, failed runs and the work queue's oldest
// message, and notify AlarmTopicArn only when one is given.
func TestTemplateAlarms(t *testing.T) {
	t.Parallel()
	tpl, err := lambdaemu.ReadTemplate("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const topic = "arn:aws:sns:us-east-1:000000000000:oncall"
	for _, tc := range []struct {
		name   string
		params map[string]string
	}{
		{"defaults", nil},
		{"namespace and topic", map[string]string{"MetricsNamespace": "Orders/prod", "AlarmTopicArn": topic, "OldestMessageAlarmSeconds": "1800"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := &lambdaemu.ResolveOptions{Parameters: tc.params}
			ns, err := tpl.Parameter("MetricsNamespace", opts)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := handler.ConfigFromEnv(functionEnv(t, tpl, "FlowFunction", opts))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cfg.Worker.Engine.Metrics.(*lambdaio.EMF); !ok {
				t.Fatalf("the flow function writes no metrics (%T)", cfg.Worker.Engine.Metrics)
			}
			want := map[string]struct{ namespace, metric, dimension, value string }{
				"DeadLetterAlarm":    {"AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "DeadLetterQueue.QueueName"},
				"FailedRunsAlarm":    {ns, engine.MetricRunsFailed, "FunctionName", "FlowFunction"},
				"OldestMessageAlarm": {"AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "WorkQueue.QueueName"},
			}
			for id, w := range want {
				typ, props, err := tpl.Resource(id, opts)
				if err != nil {
					t.Fatal(err)
				}
				dims, _ := props["Dimensions"].([]any)
				got := fmt.Sprint(props["Namespace"], " ", props["MetricName"], " ", dims)
				wantDims := fmt.Sprint([]any{map[string]any{"Name": w.dimension, "Value": w.value}})
				if typ != "AWS::CloudWatch::Alarm" || props["Namespace"] != w.namespace || props["MetricName"] != w.metric || fmt.Sprint(dims) != wantDims {
					t.Errorf("%s = %s %s; want %s %s %s", id, typ, got, w.namespace, w.metric, wantDims)
				}
				actions, _ := props["AlarmActions"].([]any)
				if tc.params["AlarmTopicArn"] == "" && len(actions) != 0 || tc.params["AlarmTopicArn"] != "" && !slices.Equal(actions, []any{topic}) {
					t.Errorf("%s notifies %v", id, actions)
				}
			}
			_, props, err := tpl.Resource("OldestMessageAlarm", opts)
			if err != nil {
				t.Fatal(err)
			}
			if threshold, _ := tpl.Parameter("OldestMessageAlarmSeconds", opts); fmt.Sprint(props["Threshold"]) != threshold {
				t.Errorf("the backlog alarm's threshold is %v, want %s", props["Threshold"], threshold)
			}
		})
	}
}
