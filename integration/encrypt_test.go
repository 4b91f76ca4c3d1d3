//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/encrypt/kmskeys"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// TestEncryptedRunThroughLambda: with a KMS key (moto's) in SKEIN_KMS_KEY_ID,
// a run whose input and output hold a marker, large enough to be
// claim-checked to S3, completes through the real bootstrap and reads back
// in clear through an encrypted client, while no DynamoDB item and no S3
// object holds the marker.
func TestEncryptedRunThroughLambda(t *testing.T) {
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
	s := newStack(t, stackOptions{Env: map[string]string{"SKEIN_KMS_KEY_ID": keyARN}})

	keys, err := kmskeys.New(kc, keyARN)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := encrypt.Wrap(s.world, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	client, err := skclient.New(skclient.Config{World: sealed, Registry: reg}, knobs.WithResultPoll(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "PLAINTEXT-MARKER-93"
	id := marker + strings.Repeat("x", 80_000) // over the claim-check threshold
	order := demo.Order{ID: id, Items: []string{"book " + marker}, Total: 7}
	idem := skclient.WithIdempotencyKey("encrypted-order")
	run, err := demo.FulfilOrder.Start(ctx, client, order, idem)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.wait(run.ID(), time.Minute); info.Status != world.RunStatusCompleted {
		t.Fatalf("run %s: %s", info.Status, info.ErrorCode)
	}
	out, err := run.Result(ctx)
	if err != nil || !strings.HasPrefix(out, "order "+marker) || !strings.Contains(out, "label:book "+marker) {
		t.Fatalf("result %.80q…, %v", out, err)
	}
	// The key again: its run's input, read back from the bucket and opened
	// with the KMS key, is compared with the start's: the same input is the
	// same run, another one a conflict.
	if again, err := demo.FulfilOrder.Start(ctx, client, order, idem); err != nil || again.ID() != run.ID() || !again.Existed() {
		t.Fatalf("the same key and input: %v; want run %s again", err, run.ID())
	}
	var ce *skclient.RequestError
	if _, err := demo.FulfilOrder.Start(ctx, client, demo.Order{ID: id, Items: []string{"pen"}, Total: 7}, idem); !errors.As(err, &ce) || ce.Kind != world.ErrConflict || ce.RunID != run.ID() || !ce.InputDiffers {
		t.Fatalf("the same key, another input: %v; want a *RequestError (conflict) naming run %s", err, run.ID())
	}
	s.drain(time.Minute)
	s.noFailures()

	// Nothing underneath holds the marker: not the table...
	items := 0
	var start map[string]ddbtypes.AttributeValue
	for {
		page, err := s.clients.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.res.Table), ExclusiveStartKey: start})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			items++
			if b := fmt.Sprintf("%#v", it); strings.Contains(b, marker) {
				t.Fatalf("a table item holds the marker in clear: %.300s", b)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		start = page.LastEvaluatedKey
	}
	// ...nor the bucket, where the large payloads went.
	objects := 0
	list, err := s.clients.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.res.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		got, err := s.clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.res.Bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got.Body)
		got.Body.Close()
		objects++
		if bytes.Contains(b, []byte(marker)) {
			t.Fatalf("S3 object %s holds the marker in clear", aws.ToString(o.Key))
		}
	}
	if items == 0 || objects == 0 {
		t.Fatalf("%d items and %d objects: the test looked at nothing (no claim check?)", items, objects)
	}
	// A reader without the key's permission (here: no key at all) is told
	// which key it needs.
	raw, err := s.world.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if kid, ok := encrypt.SealedKeyID(raw.Input); !ok || kid != keyARN {
		t.Errorf("the stored input names key %q (sealed %v), want %s", kid, ok, keyARN)
	}
	t.Logf("%d items, %d S3 objects, none in clear", items, objects)
}
