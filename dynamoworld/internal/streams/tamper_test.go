package streams_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
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

// TestCopiedObjectRefusedOnS3: what a trial did with the AWS CLI (aws s3api
// copy-object of run A's object at index 4, metadata and all, to run B's
// stream at index 4) makes run B's ReadStream fail with world.ErrCorrupt
// naming the copy, instead of returning run A's chunks as run B's.
func TestCopiedObjectRefusedOnS3(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, _ := dynamotest.NewResources(t, c)
	s, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket}, knobs.WithMaxChunksPerObject(4))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const name = "user.cHJvZ3Jlc3M"
	runA, runB := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	for _, w := range []struct {
		run    string
		chunks []string
	}{{runA, []string{"a0", "a1", "a2", "a3"}}, {runA, []string{"run A's secret"}}, {runB, []string{"b0", "b1", "b2", "b3"}}} {
		var cs [][]byte
		for _, c := range w.chunks {
			cs = append(cs, []byte(c))
		}
		if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: w.run, Name: name, Chunks: cs}); err != nil {
			t.Fatal(err)
		}
	}
	from := streams.DefaultPrefix + runA + "/" + name + "/0000000000000004"
	to := streams.DefaultPrefix + runB + "/" + name + "/0000000000000004"
	if _, err := c.S3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(to), CopySource: aws.String(r.Bucket + "/" + from)}); err != nil {
		t.Fatal(err)
	}
	p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: runB, Name: name, Start: 4})
	if !errors.Is(err, world.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(to)) {
		t.Fatalf("ReadStream of run B from the copy: %+v, %v; want world.ErrCorrupt naming %s", p, err, to)
	}
	if p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: runA, Name: name, Start: 4}); err != nil || len(p.Chunks) != 1 || string(p.Chunks[0].Data) != "run A's secret" {
		t.Fatalf("run A's own object: %+v, %v", p, err)
	}
}

// TestStreamBytesFramingOnS3: on S3, the bytes bound counts each chunk
// without its framing (the SDK's tag byte): five chunks of 1000 bytes and a
// tag fill a bound of 5000 exactly, and one byte more is refused as 5001,
// also by a Streamer that learns the count from the objects' metadata.
func TestStreamBytesFramingOnS3(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, _ := dynamotest.NewResources(t, c)
	ctx := context.Background()
	run := ids.New(world.PrefixRun)
	write := func(s *streams.Streamer, sizes ...int) error {
		var cs [][]byte
		for _, n := range sizes {
			cs = append(cs, make([]byte, n))
		}
		return s.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "user.b3V0", Chunks: cs, Framing: 1})
	}
	var ss [2]*streams.Streamer
	for i := range ss {
		s, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket, MaxStreamBytes: 5000})
		if err != nil {
			t.Fatal(err)
		}
		ss[i] = s
	}
	for i := range 5 {
		if err := write(ss[i%2], 1001); err != nil {
			t.Fatalf("chunk %d of 1000 bytes and a tag: %v", i, err)
		}
	}
	for i, s := range ss {
		var le *world.LimitError
		if err := write(s, 2); !errors.As(err, &le) || le.Max != 5000 || le.Size != 5001 {
			t.Fatalf("one byte more, through Streamer %d: %v; want a *world.LimitError of 5001 of 5000", i, err)
		}
	}
}

// TestTruncatedStreamRefusedOnS3: on S3, a stream's close marker is a
// 9-byte object that ends a read; an object of a closed stream overwritten
// with 0 bytes (`aws s3 cp /dev/null`), an object deleted from its middle,
// and an empty object put at the tail of an open stream each make
// ReadStream fail with world.ErrCorrupt naming an object, where readers
// took the empty object for the close and returned a truncated stream as
// complete.
func TestTruncatedStreamRefusedOnS3(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, _ := dynamotest.NewResources(t, c)
	ctx := context.Background()
	fresh := func() *streams.Streamer {
		s, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket}, knobs.WithMaxChunksPerObject(2))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	key := func(run string, i int) string { return fmt.Sprintf("%s%s/s/%016d", streams.DefaultPrefix, run, i) }
	write := func(close bool) string {
		s, run := fresh(), ids.New(world.PrefixRun)
		for _, w := range []string{"ab", "cd", "ef"} {
			if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "s", Chunks: [][]byte{{w[0]}, {w[1]}}}); err != nil {
				t.Fatal(err)
			}
		}
		if close {
			if err := s.CloseStream(ctx, &world.CloseStreamParams{RunID: run, Name: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		return run
	}
	wantCorrupt := func(run, key, what string) {
		t.Helper()
		p, err := fresh().ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "s"})
		if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: ReadStream: %+v, %v; want world.ErrCorrupt naming %s", what, p, err, key)
		}
	}
	run := write(true)
	head, err := c.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key(run, 6))})
	if err != nil || aws.ToInt64(head.ContentLength) != 9 {
		t.Fatalf("the close marker: %+v, %v; want 9 bytes", head, err)
	}
	if p, err := fresh().ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "s"}); err != nil || len(p.Chunks) != 6 || !p.Done {
		t.Fatalf("the closed stream: %+v, %v; want 6 chunks and done", p, err)
	}
	if _, err := c.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key(run, 2)), Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(run, key(run, 2), "an object of a closed stream emptied")

	run = write(true)
	if _, err := c.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key(run, 2))}); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(run, key(run, 4), "an object deleted from a closed stream")

	run = write(false)
	if _, err := c.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key(run, 6)), Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(run, key(run, 6), "an empty object at the tail of an open stream")
}
