package schedmsg_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/schedmsg"
)

func TestDecodeMessage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name, body string
		want       schedmsg.Firing // zero Workflow: want an error
		err        string
	}{
		{"arn", `{"skeinSchedule":{"scheduleArn":"arn:aws:scheduler:eu-west-1:123456789012:schedule/default/nightly","scheduledTime":"2026-11-24T10:00:00Z","workflow":"report","input":{"a":1}}}`,
			schedmsg.Firing{Name: "nightly", Time: at, Workflow: "report", Input: []byte(`{"a":1}`)}, ""},
		{"arn in a group", `{"skeinSchedule":{"scheduleArn":"arn:aws:scheduler:eu-west-1:123456789012:schedule/ops/nightly","scheduledTime":"2026-11-24T11:00:00+01:00","workflow":"report"}}`,
			schedmsg.Firing{Name: "ops/nightly", Time: at, Workflow: "report", Input: []byte(`null`)}, ""},
		{"name", `{"skeinSchedule":{"name":"n","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w","input":"x"}}`,
			schedmsg.Firing{Name: "n", Time: at, Workflow: "w", Input: []byte(`"x"`)}, ""},
		{"placeholder time", `{"skeinSchedule":{"name":"n","scheduledTime":"<aws.scheduler.scheduled-time>","workflow":"w"}}`, schedmsg.Firing{}, "placeholder"},
		{"placeholder arn", `{"skeinSchedule":{"scheduleArn":"<aws.scheduler.schedule-arn>","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w"}}`, schedmsg.Firing{}, "placeholder"},
		{"arn of another service", `{"skeinSchedule":{"scheduleArn":"arn:aws:sqs:eu-west-1:1:q","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w"}}`, schedmsg.Firing{}, "not a schedule ARN"},
		{"arn without a group", `{"skeinSchedule":{"scheduleArn":"arn:aws:scheduler:eu-west-1:1:schedule/x","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w"}}`, schedmsg.Firing{}, "schedule/<group>/<name>"},
		{"no workflow", `{"skeinSchedule":{"name":"n","scheduledTime":"2026-11-24T10:00:00Z"}}`, schedmsg.Firing{}, "no workflow"},
		{"unknown field", `{"skeinSchedule":{"name":"n","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w","extra":1}}`, schedmsg.Firing{}, "unknown field"},
		{"other top-level field", `{"skeinSchedule":{"name":"n","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w"},"runId":"x"}`, schedmsg.Firing{}, "one top-level field"},
		{"not json", `{"skeinSchedule":`, schedmsg.Firing{}, "unexpected end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := schedmsg.DecodeMessage([]byte(c.body))
			if c.err != "" {
				var me *schedmsg.MessageError
				if !errors.As(err, &me) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("DecodeMessage = %+v, %v; want a *MessageError with %q", f, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != c.want.Name || !f.Time.Equal(c.want.Time) || f.Workflow != c.want.Workflow || string(f.Input) != string(c.want.Input) {
				t.Errorf("DecodeMessage = %+v, want %+v", f, c.want)
			}
		})
	}
}

func TestIsMessage(t *testing.T) {
	t.Parallel()
	body, err := schedmsg.EncodeMessage(schedmsg.Message{Name: "n", ScheduledTime: "2026-11-24T10:00:00Z", Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		body string
		want bool
	}{
		{string(body), true},
		{`{"skeinSchedule":null}`, true},
		{`{"runId":"run_01"}`, false},
		{`{"runId":"run_01","stepId":"skeinSchedule"}`, false},
		{`"skeinSchedule"`, false},
		{``, false},
	}
	for _, c := range cases {
		if got := schedmsg.IsMessage([]byte(c.body)); got != c.want {
			t.Errorf("IsMessage(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 24, 11, 0, 0, 0, paris)
	if got, want := schedmsg.Key("nightly", at), "schedule:nightly:2026-11-24T10:00:00Z"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	f := schedmsg.Firing{Name: "nightly", Time: at.UTC()}
	if f.Key() != schedmsg.Key("nightly", at) {
		t.Errorf("Firing.Key = %q", f.Key())
	}
}
