package dlq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// fakeSQS holds a dead-letter queue's messages; a receive hides them all.
type fakeSQS struct {
	mu       sync.Mutex
	dead     []sqstypes.Message
	hidden   map[string]bool
	sent     []string // bodies sent to the work queue
	failSend bool
}

func (q *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.dead {
		if !q.hidden[aws.ToString(m.ReceiptHandle)] && len(out.Messages) < int(in.MaxNumberOfMessages) {
			q.hidden[aws.ToString(m.ReceiptHandle)] = true
			out.Messages = append(out.Messages, m)
		}
	}
	return out, nil
}

func (q *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failSend {
		return nil, errors.New("send refused")
	}
	q.sent = append(q.sent, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{}, nil
}

func (q *fakeSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range q.dead {
		if aws.ToString(m.ReceiptHandle) == aws.ToString(in.ReceiptHandle) {
			q.dead = append(q.dead[:i], q.dead[i+1:]...)
			delete(q.hidden, aws.ToString(in.ReceiptHandle))
			break
		}
	}
	return &sqs.DeleteMessageOutput{}, nil
}

func (q *fakeSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.hidden, aws.ToString(in.ReceiptHandle))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (q *fakeSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:work-dlq"}`}}, nil
}

func (q *fakeSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://sqs/000000000000/" + aws.ToString(in.QueueName))}, nil
}

func (q *fakeSQS) visible() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.dead) - len(q.hidden)
}

// TestRedrive: a dry redrive says what each dead letter resumes and gives
// them all back; a redrive moves the Skein messages (the live run's, the
// resting run's) and leaves the other, visible; a failed move gives back
// what it did not move and says how far it got.
func TestRedrive(t *testing.T) {
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	ids := world.NewIDSource(nil, nil)
	live, resting := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	for run, evs := range map[string][]world.EventData{
		live:    {&world.RunCreated{WorkflowName: "greet"}, &world.RunStarted{}},
		resting: {&world.RunCreated{WorkflowName: "greet"}, &world.RunStarted{}, &world.RunCompleted{Output: []byte(`1`)}, &world.RunDeactivated{}},
	} {
		var in []world.EventInput
		for _, d := range evs {
			in = append(in, world.EventInput{Data: d})
		}
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: in}); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(i int, body string) sqstypes.Message {
		return sqstypes.Message{MessageId: aws.String(fmt.Sprint("m", i)), ReceiptHandle: aws.String(fmt.Sprint("r", i)), Body: aws.String(body)}
	}
	q := &fakeSQS{hidden: map[string]bool{}, dead: []sqstypes.Message{
		msg(0, fmt.Sprintf(`{"runId":%q}`, live)), msg(1, fmt.Sprintf(`{"runId":%q}`, resting)), msg(2, "junk"),
	}}
	r := &Redriver{Q: q, W: w, WorkURL: "http://sqs/000000000000/work"}
	dry, err := r.Redrive(ctx, true, MaxDefault)
	if err != nil || dry.DLQURL != "http://sqs/000000000000/work-dlq" || len(dry.Letters) != 3 || dry.Moved != 0 || q.visible() != 3 {
		t.Fatalf("dry run: %+v, %v; %d visible after", dry, err, q.visible())
	}
	for i, want := range []struct{ run, status, does string }{
		{live, "running", "resumes the run"},
		{resting, "completed", "nothing to resume (the run is at rest)"},
		{"", "", "stays: not a Skein message"},
	} {
		if l := dry.Letters[i]; l.RunID != want.run || l.Status != want.status || l.Does != want.does || l.Skein != (want.run != "") {
			t.Errorf("letter %d: %+v, want %+v", i, l, want)
		}
	}
	q.failSend = true
	if rep, err := r.Redrive(ctx, false, MaxDefault); err == nil || rep.Moved != 0 || q.visible() != 3 {
		t.Fatalf("a redrive whose send fails: %+v, %v; %d visible after, want an error and all 3 given back", rep, err, q.visible())
	}
	q.failSend = false
	rep, err := r.Redrive(ctx, false, MaxDefault)
	if err != nil || rep.Moved != 2 || rep.Kept != 1 || len(q.sent) != 2 || len(q.dead) != 1 || q.visible() != 1 {
		t.Fatalf("redrive: %+v, %v; sent %d, %d left (%d visible)", rep, err, len(q.sent), len(q.dead), q.visible())
	}
	if !rep.Letters[0].Moved || !rep.Letters[1].Moved || rep.Letters[2].Moved {
		t.Errorf("moved flags: %+v", rep.Letters)
	}
	if _, err := r.Redrive(ctx, false, 0); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("a redrive of at most 0 letters: %v, want world.ErrInvalid", err)
	}
}
