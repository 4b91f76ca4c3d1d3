package dynamoworld_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// TestClaimCheckedObjectReplaced: a run's claim-checked objects replaced in
// S3 with other bytes (plaintext of the payload's shape, or the stored
// bytes with one byte changed) make Client.Result, GetStep and ListEvents
// fail with world.ErrCorrupt, sealed (encrypt) and plain payloads alike:
// an object's key holds the sha256 of its bytes, and every read checks it.
func TestClaimCheckedObjectReplaced(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	cfg := dynamotest.Config(c, r, url)
	cfg.ClaimCheckThreshold = 1024
	keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, encrypt.DataKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	open := func(t *testing.T, sealed bool) world.World {
		dw, err := dynamoworld.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dw.Close() })
		if !sealed {
			return dw
		}
		ew, err := encrypt.Wrap(dw, encrypt.Config{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return ew
	}
	big := []byte(`"` + strings.Repeat("x", 4096) + `"`)
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "sealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			w := open(t, sealed)
			run := ids.New(world.PrefixRun)
			step := ids.New(world.PrefixStep)
			mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}},
				world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
			mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepStarted{}})
			mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCompleted{Result: big}})
			mustAppend(t, w, run, world.EventInput{Data: &world.RunCompleted{Output: big}})

			listed, err := c.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(r.Bucket), Prefix: aws.String(dynamoworld.DefaultPrefix + "blobs/" + run + "/")})
			if err != nil || len(listed.Contents) == 0 {
				t.Fatalf("the run's objects: %v, %v", listed, err)
			}
			orig := map[string][]byte{}
			for _, o := range listed.Contents {
				orig[aws.ToString(o.Key)] = getObject(t, c.S3, r.Bucket, aws.ToString(o.Key))
			}
			for _, tc := range []struct {
				name   string
				tamper func([]byte) []byte
			}{
				{"plaintext", func([]byte) []byte { return []byte(`"attacker"`) }},
				{"one byte changed", func(b []byte) []byte { c := bytes.Clone(b); c[len(c)/2] ^= 0x01; return c }},
			} {
				for k, b := range orig {
					if _, err := c.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(k), Body: bytes.NewReader(tc.tamper(b))}); err != nil {
						t.Fatal(err)
					}
				}
				fresh := open(t, sealed) // nothing cached
				client, err := client.New(client.Config{World: fresh})
				if err != nil {
					t.Fatal(err)
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				var out string
				err = client.Result(rctx, run, &out)
				cancel()
				if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "s3://"+r.Bucket+"/") {
					t.Errorf("%s: Result: %q, %v; want world.ErrCorrupt naming the object", tc.name, out, err)
				}
				if _, err := fresh.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: step}); !errors.Is(err, world.ErrCorrupt) {
					t.Errorf("%s: GetStep: %v, want world.ErrCorrupt", tc.name, err)
				}
				if _, err := fresh.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 100}}); !errors.Is(err, world.ErrCorrupt) {
					t.Errorf("%s: ListEvents: %v, want world.ErrCorrupt", tc.name, err)
				}
			}
		})
	}
}

func getObject(t *testing.T, c dynamoworld.S3API, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
