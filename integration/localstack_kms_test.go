//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/encrypt/kmskeys"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// lsEncrypted: with a key of LocalStack's KMS in the flow function's
// SKEIN_KMS_KEY_ID (set for the case, as PayloadEncryption own-key sets
// it), a run whose input holds a marker, large enough to be claim-checked,
// completes and reads back in clear through an encrypting client, while no
// item of the table and no object of the bucket holds the marker.
func lsEncrypted(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc := kms.NewFromConfig(awsCfg)
	key, err := kc.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("skein " + t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	old := lsFlowEnv(t, map[string]string{"SKEIN_KMS_KEY_ID": keyARN})
	defer lsFlowEnvIs(t, old)
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
	client, err := client.New(client.Config{World: sealed, Registry: reg}, knobs.WithResultPoll(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	marker := "PLAINTEXT-MARKER-" + strings.ToUpper(names.New(""))
	run, err := demo.FulfilOrder.Start(ctx, client, demo.Order{ID: marker + strings.Repeat("x", 80_000), Items: []string{"book " + marker}, Total: 7})
	if err != nil {
		t.Fatal(err)
	}
	if info := s.wait(run.ID(), 2*time.Minute); info.Status != world.RunStatusCompleted {
		t.Fatalf("run %s: %s", info.Status, info.ErrorCode)
	}
	if out, err := run.Result(ctx); err != nil || !strings.HasPrefix(out, "order "+marker) || !strings.Contains(out, "label:book "+marker) {
		t.Fatalf("result %.80q…, %v", out, err)
	}
	lsDrain(t, s, time.Minute)
	items := 0
	p := dynamodb.NewScanPaginator(s.clients.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(s.res.Table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			items++
			if b := fmt.Sprintf("%#v", it); strings.Contains(b, marker) {
				t.Fatalf("a table item holds the marker in clear: %.300s", b)
			}
		}
	}
	objects := 0
	op := s3.NewListObjectsV2Paginator(s.clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(s.res.Bucket)})
	for op.HasMorePages() {
		page, err := op.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			got, err := s.clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.res.Bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			objects++
			if bytes.Contains(b, []byte(marker)) {
				t.Fatalf("S3 object %s holds the marker in clear", aws.ToString(o.Key))
			}
		}
	}
	raw, err := s.world.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if kid, ok := encrypt.SealedKeyID(raw.Input); !ok || kid != keyARN {
		t.Errorf("the stored input names key %q (sealed %v), want %s", kid, ok, keyARN)
	}
	if items == 0 || objects == 0 {
		t.Fatalf("%d items and %d objects: the case looked at nothing", items, objects)
	}
}
