// Package dlq moves a deployed stack's dead letters back to its work
// queue, saying for each what moving it back resumes. skein dlq redrive
// and the dashboard's dead-letter page (webui, through skein ui) both call
// Redriver.Redrive: the one copy of the redrive.
package dlq

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/world"
)

// Queue is the part of the SQS client a Redriver uses.
type Queue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// MaxDefault bounds the dead letters one redrive reads, by default.
const MaxDefault = 1000

// Hide is how long a redrive hides the dead letters it has read while it
// lists and moves them; those it does not move are made visible again at
// once.
const Hide = 5 * time.Minute

// Redriver moves dead letters from DLQURL (when empty: the dead-letter
// queue WorkURL's redrive policy names) back to WorkURL. W is read for
// each letter's run. It is safe for concurrent use (it is not changed).
type Redriver struct {
	Q               Queue
	W               world.World
	WorkURL, DLQURL string
}

// Letter is one dead letter read, with what moving it back does.
type Letter struct {
	MessageID string
	// Skein: the body is a Skein message (a run's, or a schedule's
	// firing): a redrive moves it back. Other bodies stay, to be
	// inspected.
	Skein                   bool
	RunID, Workflow, Status string
	// Does says what moving it back does ("resumes the run", "nothing to
	// resume (the run is at rest)", "stays: not a Skein message").
	Does string
	// Moved: this redrive moved it back to the work queue.
	Moved bool
	m     sqstypes.Message
}

// Report is what one Redrive read and did.
type Report struct {
	DLQURL      string
	Letters     []Letter
	Dry         bool
	Moved, Kept int
	// Warnings are letters left hidden (for up to Hide) because giving
	// them back failed.
	Warnings []string
}

// Redrive reads up to maxN dead letters (hidden for Hide meanwhile) and
// says for each what moving it back does. Unless dry, it then moves every
// Skein message back to the work queue as a new message (its receive
// count starts afresh) and deletes it from the dead-letter queue; the
// rest are made visible again. A message of a run at rest is moved too:
// the engine drops it. On an error while moving, the report says what was
// read and moved so far.
func (r *Redriver) Redrive(ctx context.Context, dry bool, maxN int) (*Report, error) {
	if maxN <= 0 {
		return nil, fmt.Errorf("%w: read at most %d dead letters: must be positive", world.ErrInvalid, maxN)
	}
	rep := &Report{DLQURL: r.DLQURL, Dry: dry}
	if rep.DLQURL == "" {
		u, err := r.deadLetterURL(ctx)
		if err != nil {
			return nil, err
		}
		rep.DLQURL = u
	}
	letters, err := r.read(ctx, rep.DLQURL, maxN)
	rep.Letters = letters
	if err != nil {
		for i := range rep.Letters {
			r.giveBack(ctx, rep, &rep.Letters[i])
		}
		return rep, err
	}
	for i := range rep.Letters {
		l := &rep.Letters[i]
		if dry || !l.Skein {
			rep.Kept++
			r.giveBack(ctx, rep, l)
			continue
		}
		if err := r.move(ctx, rep.DLQURL, l.m); err != nil {
			for j := i; j < len(rep.Letters); j++ {
				r.giveBack(ctx, rep, &rep.Letters[j])
			}
			return rep, fmt.Errorf("moved %d of %d; message %s: %w", rep.Moved, len(rep.Letters), l.MessageID, err)
		}
		l.Moved = true
		rep.Moved++
	}
	return rep, nil
}

// deadLetterURL reads the dead-letter queue's URL from the work queue's
// redrive policy.
func (r *Redriver) deadLetterURL(ctx context.Context) (string, error) {
	out, err := r.Q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.WorkURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", fmt.Errorf("read the work queue's redrive policy: %w", err)
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &policy); err != nil || policy.Target == "" {
		return "", fmt.Errorf("the work queue %s has no redrive policy naming a dead-letter queue: name the dead-letter queue's URL", r.WorkURL)
	}
	parts := strings.Split(policy.Target, ":") // arn:aws:sqs:region:account:name
	if len(parts) < 6 {
		return "", fmt.Errorf("the work queue's dead-letter target %q is not an SQS queue ARN: name the dead-letter queue's URL", policy.Target)
	}
	u, err := r.Q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("find the dead-letter queue %s: %w", parts[5], err)
	}
	return aws.ToString(u.QueueUrl), nil
}

// read receives up to maxN dead letters, hiding them for Hide, and says
// for each what moving it back does.
func (r *Redriver) read(ctx context.Context, dlqURL string, maxN int) ([]Letter, error) {
	var out []Letter
	for len(out) < maxN {
		got, err := r.Q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: int32(min(10, maxN-len(out))), WaitTimeSeconds: 1,
			VisibilityTimeout: int32(Hide / time.Second), MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return out, fmt.Errorf("read the dead-letter queue: %w", err)
		}
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			out = append(out, r.describe(ctx, m))
		}
	}
	return out, nil
}

// describe says what moving dead letter m back to the work queue does.
func (r *Redriver) describe(ctx context.Context, m sqstypes.Message) Letter {
	l := Letter{m: m, MessageID: aws.ToString(m.MessageId)}
	b, err := body(m)
	if err != nil {
		l.Does = "stays: " + err.Error()
		return l
	}
	if schedmsg.IsMessage(b) {
		l.Skein, l.Does = true, "starts its schedule's firing"
		if f, err := schedmsg.DecodeMessage(b); err == nil {
			l.Workflow = f.Name
		}
		return l
	}
	msg, err := world.DecodeMessage(b)
	if err != nil {
		l.Does = "stays: not a Skein message"
		return l
	}
	l.Skein, l.RunID = true, msg.RunID
	run, err := r.W.GetRun(ctx, &world.GetRunParams{RunID: msg.RunID})
	switch {
	case errors.Is(err, world.ErrNotFound), errors.Is(err, world.ErrGone):
		l.Status, l.Does = "unknown", "nothing to resume (the run does not exist)"
	case err != nil:
		l.Status, l.Does = "?", "resumes the run, if it needs it ("+err.Error()+")"
	case run.Status.Terminal() && run.Deactivated():
		l.Workflow, l.Status, l.Does = run.WorkflowName, string(run.Status), "nothing to resume (the run is at rest)"
	default:
		l.Workflow, l.Status = run.WorkflowName, string(run.Status)
		l.Does = "resumes the run"
		if msg.StepID != "" || len(msg.StepIDs) > 0 {
			l.Does = "resumes the run (its step " + runrules.Steps(msg)[0] + ")"
		}
	}
	return l
}

// body returns a dead letter's queue body, decoded as dynamoworld encodes
// what SQS would not take as text ("skein-enc").
func body(m sqstypes.Message) ([]byte, error) {
	switch a := m.MessageAttributes["skein-enc"]; aws.ToString(a.StringValue) {
	case "":
		return []byte(aws.ToString(m.Body)), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(aws.ToString(m.Body))
		if err != nil {
			return nil, fmt.Errorf("undecodable base64 body: %v", err)
		}
		return b, nil
	case "empty":
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown body encoding %q", aws.ToString(a.StringValue))
	}
}

// move sends m to the work queue as a new message, with its attributes,
// then deletes it from the dead-letter queue.
func (r *Redriver) move(ctx context.Context, dlqURL string, m sqstypes.Message) error {
	if _, err := r.Q.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(r.WorkURL), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
	}); err != nil {
		return err
	}
	if _, err := r.Q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// Sent but not deleted: it is both in the work queue and, once its
		// hiding ends, in the dead-letter queue; a second delivery of it is
		// harmless.
		return err
	}
	return nil
}

// giveBack makes a dead letter the redrive does not move visible again.
func (r *Redriver) giveBack(ctx context.Context, rep *Report, l *Letter) {
	if _, err := r.Q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(rep.DLQURL), ReceiptHandle: l.m.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("message %s stays hidden for up to %s: %v", l.MessageID, Hide, err))
	}
}
