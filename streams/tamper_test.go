package streams_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/streams"
	"github.com/skeinflow/skein/world"
)

// TestTamperedObjectRefused: a stream object changed in S3 (one byte of a
// chunk, or other bytes in the old format) makes ReadStream fail with
// world.ErrCorrupt naming the object; it never returns other chunks.
func TestTamperedObjectRefused(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, _ := dynamotest.NewResources(t, c)
	s, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := ids.New(world.PrefixRun)
	if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "s", Chunks: [][]byte{[]byte("first chunk"), []byte("second chunk")}}); err != nil {
		t.Fatal(err)
	}
	key := streams.DefaultPrefix + run + "/s/0000000000000000"
	got, err := c.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"one byte changed", bytes.Replace(orig, []byte("second"), []byte("secOnd"), 1)},
		{"other bytes", []byte("SKS1\x02\x0b\x0cfirst chunkforged chunk")},
	} {
		if _, err := c.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key), Body: bytes.NewReader(tc.body),
			Metadata: map[string]string{"count": "2"}}); err != nil {
			t.Fatal(err)
		}
		p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "s"})
		if !errors.Is(err, world.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(key)) {
			t.Errorf("%s: ReadStream: %v, %v; want world.ErrCorrupt naming %s", tc.name, p, err, key)
		}
	}
}
