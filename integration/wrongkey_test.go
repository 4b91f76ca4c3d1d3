//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/examples/lambda/demo"
)

// foreignKeys wraps data keys with a KMS key under an encryption context
// that is not Skein's: KMS then refuses to unwrap them for the flow
// function (as it would a function whose role may not use the key).
type foreignKeys struct {
	api   *kms.Client
	keyID string
}

var foreignContext = map[string]string{"skein": "another-application"}

func (k foreignKeys) NewDataKey(ctx context.Context) ([]byte, []byte, string, error) {
	out, err := k.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(k.keyID), KeySpec: types.DataKeySpecAes256, EncryptionContext: foreignContext})
	if err != nil {
		return nil, nil, "", err
	}
	return out.Plaintext, out.CiphertextBlob, aws.ToString(out.KeyId), nil
}

func (k foreignKeys) OpenDataKey(ctx context.Context, keyID string, wrapped []byte) ([]byte, error) {
	out, err := k.api.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: wrapped, KeyId: aws.String(keyID), EncryptionContext: foreignContext})
	if err != nil {
		return nil, &encrypt.KeyError{KeyID: keyID, Err: err}
	}
	return out.Plaintext, nil
}

// TestWrongKeyThroughLambda: the real flow function, whose KMS key cannot
// open a run's data key, receives the run's message again and again, far
// more often than the queue's maxReceiveCount. No record is reported
// failed, nothing reaches the dead-letter queue and the run is not failed:
// the message goes back to the queue each time, and the function logs an
// ERROR naming the run and the key.
func TestWrongKeyThroughLambda(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc := kms.NewFromConfig(awsCfg)
	key, err := kc.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("skein " + t.Name())})
	if err != nil {
		t.Fatalf("moto KMS (AWS_ENDPOINT_URL_KMS): %v", err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	s := newStack(t, stackOptions{
		Parameters: map[string]string{"MaxReceiveCount": "2"},
		Env: map[string]string{"SKEIN_KMS_KEY_ID": keyARN,
			"SKEIN_VERSION_RETRY_DELAY": "100ms", "SKEIN_VERSION_RETRY_LIMIT": "200ms"},
	})
	sealed, err := encrypt.Wrap(s.world, encrypt.Config{Keys: foreignKeys{kc, keyARN}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Config{World: sealed, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	run, err := demo.Serial.Start(ctx, client, 2)
	if err != nil {
		t.Fatal(err)
	}
	refusals := func() int {
		n := 0
		for _, r := range s.flowLogs.records() {
			if r["level"] == "ERROR" && r["run"] == run.ID() && r["keyId"] == keyARN {
				n++
			}
		}
		return n
	}
	for limit := time.Now().Add(time.Minute); refusals() < 6 && time.Now().Before(limit); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := refusals(); n < 6 {
		t.Fatalf("the function logged %d ERROR lines naming run %s and key %s, want 6 or more:\n%s", n, run.ID(), keyARN, s.flowLogs.String())
	}
	s.noFailures()
	info, err := client.GetRun(ctx, run.ID())
	if err != nil || info.Status.Terminal() {
		t.Fatalf("run %+v (%v), want it still waiting for a function with its key", info, err)
	}
	out, err := s.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &s.queues.DeadLetterURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Fatalf("the dead-letter queue holds %d messages, want none: %s", len(out.Messages), aws.ToString(out.Messages[0].Body))
	}
	var refused int
	for _, m := range s.messages() {
		if m.RunID == run.ID() {
			refused = max(refused, m.Refused)
		}
	}
	if refused < 5 {
		t.Errorf("the run's message came back refused %d times at most, want 5 or more", refused)
	}
	if err := client.Cancel(ctx, run.ID(), "test over"); err != nil {
		t.Logf("cancel: %v", err)
	}
}
