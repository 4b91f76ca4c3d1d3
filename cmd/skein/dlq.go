package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/schedule"
	"github.com/skeinflow/skein/world"
)

// dlqQueue is the part of the SQS client skein dlq uses.
type dlqQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// dlqMaxDefault bounds the dead letters one skein dlq redrive reads.
const dlqMaxDefault = 1000

// dlqHide is how long skein dlq redrive hides the dead letters it has
// read while it lists and moves them; those it does not move are made
// visible again at once.
const dlqHide = 5 * time.Minute

var dlqRedriveCmd = &command{
	group: "dlq", name: "redrive", usage: "[-dry-run] [-dlq-url url] [-max n]",
	summary: "move a deployed stack's dead letters back to the work queue, saying what they resume",
	help: `
Reads the dead-letter queue of a deployed stack (the one the work queue's
redrive policy names, or -dlq-url), lists each message with the run it
belongs to, the run's workflow and status, and what moving it back does,
then moves every Skein message back to the work queue as a new message
(its receive count starts afresh) and deletes it from the dead-letter
queue. A message of a run that is at rest has nothing left to resume: it
is moved too, and the engine drops it. A body that is not a Skein message
stays in the dead-letter queue, to be inspected. With -dry-run, only lists.
At most -max messages (default 1000) are read per command.

Examples:
  skein -stack my-app dlq redrive -dry-run
  skein -stack my-app dlq redrive`,
	setup: func(fs *flag.FlagSet) runFunc {
		dry := fs.Bool("dry-run", false, "list what a redrive would resume, and move nothing")
		dlqURL := fs.String("dlq-url", "", "the dead-letter queue's `url` (default: the work queue's redrive policy's)")
		maxN := fs.Int("max", dlqMaxDefault, "read at most `n` dead letters")
		return func(ctx context.Context, e *env, _ []string) error {
			if !e.remote.set() {
				return usagef("skein dlq works on a deployed stack: pass -stack (or -table, -queue-url and -bucket)")
			}
			if *maxN <= 0 {
				return usagef("-max must be positive, got %d", *maxN)
			}
			if err := e.open(ctx); err != nil {
				return err
			}
			if e.sqs == nil {
				return errors.New("no SQS client for the stack")
			}
			r := &redriver{q: e.sqs, w: e.w, workURL: e.remote.queueURL, dlqURL: *dlqURL}
			return r.run(ctx, e, *dry, *maxN)
		}
	},
}

// redriver moves dead letters back to the work queue.
type redriver struct {
	q               dlqQueue
	w               world.World
	workURL, dlqURL string
}

// deadLetter is one message read from the dead-letter queue, with what
// moving it back does.
type deadLetter struct {
	m                           sqstypes.Message
	skein                       bool // a Skein message: moved back
	run, workflow, status, does string
}

func (r *redriver) run(ctx context.Context, e *env, dry bool, maxN int) error {
	if r.dlqURL == "" {
		u, err := r.deadLetterURL(ctx)
		if err != nil {
			return err
		}
		r.dlqURL = u
	}
	letters, err := r.read(ctx, maxN)
	if err != nil {
		return err
	}
	if len(letters) == 0 {
		fmt.Fprintf(e.stdout, "the dead-letter queue %s is empty\n", r.dlqURL)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tRUN\tWORKFLOW\tSTATUS\tREDRIVE")
	for _, l := range letters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", aws.ToString(l.m.MessageId), dash(l.run), dash(l.workflow), dash(l.status), l.does)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	moved, kept := 0, 0
	for _, l := range letters {
		if dry || !l.skein {
			kept++
			r.giveBack(ctx, e, l.m)
			continue
		}
		if err := r.move(ctx, l.m); err != nil {
			r.giveBack(ctx, e, l.m)
			return fmt.Errorf("moved %d of %d; message %s: %w", moved, len(letters), aws.ToString(l.m.MessageId), err)
		}
		moved++
	}
	if dry {
		fmt.Fprintf(e.stdout, "dry run: %d dead letters listed, nothing moved\n", len(letters))
		return nil
	}
	fmt.Fprintf(e.stdout, "moved %d dead letters back to the work queue; %d left in the dead-letter queue\n", moved, kept)
	return nil
}

// deadLetterURL reads the dead-letter queue's URL from the work queue's
// redrive policy.
func (r *redriver) deadLetterURL(ctx context.Context) (string, error) {
	out, err := r.q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.workURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", fmt.Errorf("read the work queue's redrive policy: %w", remoteError(err))
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &policy); err != nil || policy.Target == "" {
		return "", fmt.Errorf("the work queue %s has no redrive policy naming a dead-letter queue: pass -dlq-url", r.workURL)
	}
	parts := strings.Split(policy.Target, ":") // arn:aws:sqs:region:account:name
	if len(parts) < 6 {
		return "", fmt.Errorf("the work queue's dead-letter target %q is not an SQS queue ARN: pass -dlq-url", policy.Target)
	}
	u, err := r.q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("find the dead-letter queue %s: %w", parts[5], remoteError(err))
	}
	return aws.ToString(u.QueueUrl), nil
}

// read receives up to maxN dead letters, hiding them for dlqHide, and says
// for each what moving it back does.
func (r *redriver) read(ctx context.Context, maxN int) ([]deadLetter, error) {
	var out []deadLetter
	for len(out) < maxN {
		got, err := r.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.dlqURL), MaxNumberOfMessages: int32(min(10, maxN-len(out))), WaitTimeSeconds: 1,
			VisibilityTimeout: int32(dlqHide / time.Second), MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return out, fmt.Errorf("read the dead-letter queue: %w", remoteError(err))
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
func (r *redriver) describe(ctx context.Context, m sqstypes.Message) deadLetter {
	l := deadLetter{m: m}
	body, err := deadLetterBody(m)
	if err != nil {
		l.does = "stays: " + err.Error()
		return l
	}
	if schedule.IsMessage(body) {
		l.skein, l.does = true, "starts its schedule's firing"
		if f, err := schedule.DecodeMessage(body); err == nil {
			l.workflow = f.Name
		}
		return l
	}
	msg, err := world.DecodeMessage(body)
	if err != nil {
		l.does = "stays: not a Skein message"
		return l
	}
	l.skein, l.run = true, msg.RunID
	run, err := r.w.GetRun(ctx, &world.GetRunParams{RunID: msg.RunID})
	switch {
	case errors.Is(err, world.ErrNotFound), errors.Is(err, world.ErrGone):
		l.status, l.does = "unknown", "nothing to resume (the run does not exist)"
	case err != nil:
		l.status, l.does = "?", "resumes the run, if it needs it ("+err.Error()+")"
	case run.Status.Terminal() && run.Deactivated():
		l.workflow, l.status, l.does = run.WorkflowName, string(run.Status), "nothing to resume (the run is at rest)"
	default:
		l.workflow, l.status = run.WorkflowName, string(run.Status)
		l.does = "resumes the run"
		if msg.StepID != "" || len(msg.StepIDs) > 0 {
			l.does = "resumes the run (its step " + msg.Steps()[0] + ")"
		}
	}
	return l
}

// deadLetterBody returns a dead letter's queue body, decoded as
// dynamoworld encodes what SQS would not take as text ("skein-enc").
func deadLetterBody(m sqstypes.Message) ([]byte, error) {
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
func (r *redriver) move(ctx context.Context, m sqstypes.Message) error {
	if _, err := r.q.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(r.workURL), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
	}); err != nil {
		return remoteError(err)
	}
	if _, err := r.q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// Sent but not deleted: it is both in the work queue and, once its
		// hiding ends, in the dead-letter queue; a second delivery of it is
		// harmless.
		return remoteError(err)
	}
	return nil
}

// giveBack makes a dead letter the command does not move visible again.
func (r *redriver) giveBack(ctx context.Context, e *env, m sqstypes.Message) {
	if _, err := r.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(r.dlqURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		fmt.Fprintf(e.stderr, "skein dlq redrive: message %s stays hidden for up to %s: %v\n", aws.ToString(m.MessageId), dlqHide, remoteError(err))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
