package streams_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/world"
)

// memS3 stores conditional puts like S3 and counts requests.
type memS3 struct {
	mu      sync.Mutex
	objects map[string]*s3.PutObjectInput
	bodies  map[string][]byte
	calls   map[string]int
}

func newMemS3() *memS3 {
	return &memS3{objects: map[string]*s3.PutObjectInput{}, bodies: map[string][]byte{}, calls: map[string]int{}}
}

func (f *memS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *memS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["PutObject"]++
	k := aws.ToString(in.Key)
	if _, ok := f.objects[k]; ok && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "taken"}
	}
	b, _ := io.ReadAll(in.Body)
	f.objects[k], f.bodies[k] = in, b
	return &s3.PutObjectOutput{}, nil
}

func (f *memS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetObject"]++
	k := aws.ToString(in.Key)
	var meta map[string]string
	if o, ok := f.objects[k]; ok {
		meta = o.Metadata
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(f.bodies[k])), Metadata: meta}, nil
}

func (f *memS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["HeadObject"]++
	o, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NotFound"}
	}
	return &s3.HeadObjectOutput{Metadata: o.Metadata}, nil
}

func (f *memS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ListObjectsV2"]++
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > aws.ToString(in.StartAfter) {
			keys = append(keys, k)
		}
	}
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(false)}
	for _, k := range sortedStrings(keys) {
		out.Contents = append(out.Contents, s3types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(f.bodies[k])))})
	}
	return out, nil
}

// fakeRegistry answers Register with created (or err) and records the
// calls, and the objects that existed at each.
type fakeRegistry struct {
	mu      sync.Mutex
	s3      *memS3
	created bool
	err     error
	calls   []string // runID/name
	objects []int    // objects in S3 at each call
}

func (r *fakeRegistry) Register(_ context.Context, runID, name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s3.mu.Lock()
	n := len(r.s3.objects)
	r.s3.mu.Unlock()
	r.calls, r.objects = append(r.calls, runID+"/"+name), append(r.objects, n)
	return r.created, r.err
}

func chunksOf(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, c := range s {
		out[i] = []byte(c)
	}
	return out
}

// TestRegistryNewStream: a Streamer registers each stream once, before its
// first object; a stream the registry reports new is written at index 0
// without a listing.
func TestRegistryNewStream(t *testing.T) {
	ctx := context.Background()
	f := newMemS3()
	reg := &fakeRegistry{s3: f, created: true}
	s, err := streams.New(streams.Config{S3: f, Bucket: "b", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		for i := range 3 {
			if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: name, Chunks: chunksOf(name, string(rune('0'+i)))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.CloseStream(ctx, &world.CloseStreamParams{RunID: "wrun_x", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseStream(ctx, &world.CloseStreamParams{RunID: "wrun_x", Name: "never-written"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.calls, " "); got != "wrun_x/a wrun_x/b wrun_x/never-written" {
		t.Fatalf("registered %q, want each stream once", got)
	}
	for i, n := range reg.objects {
		if want := []int{0, 3, 7}[i]; n != want {
			t.Fatalf("registration %d found %d objects, want %d (it must come before the stream's first object)", i, n, want)
		}
	}
	if n := f.count("ListObjectsV2"); n != 0 {
		t.Fatalf("%d listings, want none: new streams start at 0", n)
	}
	for _, name := range []string{"a", "b"} {
		p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: "wrun_x", Name: name})
		if err != nil || len(p.Chunks) != 6 || p.Done != (name == "a") {
			t.Fatalf("stream %s: %d chunks, done %v, %v", name, len(p.Chunks), p.Done, err)
		}
	}
}

// TestRegistryKnownStream: a stream the registry knew already is found at
// its tail by a listing, as without a registry; so is one it wrongly
// reports new (written by a Streamer without the registry): the
// conditional put refuses index 0 and the writer looks again.
func TestRegistryKnownStream(t *testing.T) {
	ctx := context.Background()
	for _, created := range []bool{false, true} {
		f := newMemS3()
		old, err := streams.New(streams.Config{S3: f, Bucket: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if err := old.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: "s", Chunks: chunksOf("0", "1")}); err != nil {
			t.Fatal(err)
		}
		s, err := streams.New(streams.Config{S3: f, Bucket: "b", Registry: &fakeRegistry{s3: f, created: created}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: "s", Chunks: chunksOf("2")}); err != nil {
			t.Fatal(err)
		}
		p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: "wrun_x", Name: "s"})
		if err != nil || len(p.Chunks) != 3 || string(p.Chunks[2].Data) != "2" || p.Chunks[2].Index != 2 {
			t.Fatalf("created %v: %+v, %v; want the write at index 2", created, p, err)
		}
	}
}

// TestRegistryError: a stream that cannot be registered is not written;
// the next write registers it.
func TestRegistryError(t *testing.T) {
	ctx := context.Background()
	f := newMemS3()
	reg := &fakeRegistry{s3: f, err: errors.New("table unavailable")}
	s, err := streams.New(streams.Config{S3: f, Bucket: "b", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: "s", Chunks: chunksOf("0")}); err == nil || !strings.Contains(err.Error(), "table unavailable") {
		t.Fatalf("write with the registry failing: %v", err)
	}
	if n := f.count("PutObject"); n != 0 {
		t.Fatalf("%d puts of an unregistered stream", n)
	}
	reg.err = nil
	if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: "s", Chunks: chunksOf("0")}); err != nil {
		t.Fatal(err)
	}
	if len(reg.calls) != 2 {
		t.Fatalf("%d registrations, want 2", len(reg.calls))
	}
}
