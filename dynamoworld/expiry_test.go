package dynamoworld_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// TestReadAfterObjectExpiry: a run older than the bucket's object expiry
// (its claim-checked payloads gone, its items still there) reads as a typed
// *world.RefusalError (ErrGone) naming the run and what expired, not as a raw
// S3 NoSuchKey; its inline parts still read.
func TestReadAfterObjectExpiry(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	cfg := dynamotest.Config(c, r, url)
	cfg.ClaimCheckThreshold = 1024
	cfg.Retention = time.Hour
	w, err := dynamoworld.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	big := []byte(`"` + strings.Repeat("x", 4096) + `"`)
	run := ids.New(world.PrefixRun)
	step := ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: big}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCompleted{Result: big}})
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`"small"`)}})

	// The bucket's lifecycle rule expires the run's objects.
	listed, err := c.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(r.Bucket), Prefix: aws.String(dynamoworld.DefaultPrefix + "blobs/" + run + "/")})
	if err != nil || len(listed.Contents) == 0 {
		t.Fatalf("the run's objects: %v, %v", listed, err)
	}
	for _, o := range listed.Contents {
		if _, err := c.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(r.Bucket), Key: o.Key}); err != nil {
			t.Fatal(err)
		}
	}

	// A World that has not cached the run reads it again.
	fresh, err := dynamoworld.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, tc := range []struct {
		name string
		read func() error
		what string
	}{
		{"GetRun", func() error { _, err := fresh.GetRun(ctx, &world.GetRunParams{RunID: run}); return err }, "input of item r#" + run},
		{"GetStep", func() error {
			_, err := fresh.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: step})
			return err
		}, "output of item r#" + run},
		{"ListEvents", func() error {
			_, err := fresh.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 100}})
			return err
		}, "s3://" + r.Bucket + "/"},
	} {
		err := tc.read()
		var gone *world.RefusalError
		if !errors.Is(err, world.ErrGone) || !errors.As(err, &gone) || gone.Entity != run || !strings.Contains(gone.Reason, tc.what) || !strings.HasSuffix(gone.Reason, " has expired") {
			t.Errorf("%s: %v, want a refusal of ErrGone for run %s naming %q", tc.name, err, run, tc.what)
			continue
		}
		if world.Status(err) != 410 || strings.Contains(err.Error(), "NoSuchKey") {
			t.Errorf("%s: status %d, %v; want 410 without the S3 code", tc.name, world.Status(err), err)
		}
	}
}
