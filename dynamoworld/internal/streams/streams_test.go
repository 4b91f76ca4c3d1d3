package streams_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

var ids = world.NewIDSource(nil, nil)

// newStreamers returns n Streamers (n "processes") on one fresh bucket of
// the emulator stack.
func newStreamers(t *testing.T, n int) []*streams.Streamer {
	t.Helper()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, _ := dynamotest.NewResources(t, c)
	out := make([]*streams.Streamer, n)
	for i := range out {
		s, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket}, knobs.WithMaxChunksPerObject(4))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}

func readAll(t *testing.T, s *streams.Streamer, run, name string) ([]world.StreamChunk, bool) {
	t.Helper()
	var all []world.StreamChunk
	next := int64(0)
	for {
		p, err := s.ReadStream(context.Background(), &world.ReadStreamParams{RunID: run, Name: name, Start: next, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Chunks...)
		if len(p.Chunks) == 0 || p.Done {
			return all, p.Done
		}
		next = p.Next
	}
}

// TestStreamersRace: writers in two processes race for one stream's tail
// through S3's conditional puts: every chunk once, indices dense, each write
// contiguous.
func TestStreamersRace(t *testing.T) {
	ss := newStreamers(t, 2)
	run := ids.New(world.PrefixRun)
	const writers, writes = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for k := range writes {
				chunks := [][]byte{[]byte(fmt.Sprintf("w%d-k%d-a", w, k)), []byte(fmt.Sprintf("w%d-k%d-b", w, k))}
				if err := ss[w%2].WriteStream(context.Background(), &world.WriteStreamParams{RunID: run, Name: "s", Chunks: chunks}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, _ := readAll(t, ss[0], run, "s")
	if len(all) != writers*writes*2 {
		t.Fatalf("%d chunks, want %d", len(all), writers*writes*2)
	}
	seen := map[string]bool{}
	for i, c := range all {
		if c.Index != int64(i) || seen[string(c.Data)] {
			t.Fatalf("chunk %d: index %d data %q (dense, once)", i, c.Index, c.Data)
		}
		seen[string(c.Data)] = true
		if d := string(c.Data); strings.HasSuffix(d, "-a") && string(all[i+1].Data) != strings.TrimSuffix(d, "a")+"b" {
			t.Fatalf("write %s is not contiguous", strings.TrimSuffix(d, "-a"))
		}
	}
}

// TestCloseRacesWrites: a close in one process against writes in another:
// each write lands before the close marker or fails with ErrConflict.
func TestCloseRacesWrites(t *testing.T) {
	ss := newStreamers(t, 2)
	run := ids.New(world.PrefixRun)
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed := map[string]bool{}
	for w := range 4 {
		wg.Go(func() {
			for k := range 10 {
				d := fmt.Sprintf("w%d-k%d", w, k)
				err := ss[1].WriteStream(context.Background(), &world.WriteStreamParams{RunID: run, Name: "s", Chunks: [][]byte{[]byte(d)}})
				switch {
				case err == nil:
					mu.Lock()
					landed[d] = true
					mu.Unlock()
				case errors.Is(err, world.ErrConflict):
					return
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		if err := ss[0].CloseStream(context.Background(), &world.CloseStreamParams{RunID: run, Name: "s"}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	all, done := readAll(t, ss[0], run, "s")
	if !done || len(all) != len(landed) {
		t.Fatalf("after the race: %d chunks done %v, want the %d acknowledged writes and done", len(all), done, len(landed))
	}
	for _, c := range all {
		if !landed[string(c.Data)] {
			t.Fatalf("chunk %q is in the stream but its write failed", c.Data)
		}
	}
	info, err := ss[1].StreamInfo(context.Background(), &world.StreamInfoParams{RunID: run, Name: "s"})
	if err != nil || !info.Done || info.TailIndex != int64(len(all))-1 {
		t.Fatalf("StreamInfo after close: %+v, %v", info, err)
	}
}

// TestLargeWriteSpansObjects: a write of more chunks than an object holds,
// read from every start, including mid-object and negative ones.
func TestLargeWriteSpansObjects(t *testing.T) {
	s := newStreamers(t, 1)[0]
	run := ids.New(world.PrefixRun)
	var chunks [][]byte
	for i := range 11 {
		chunks = append(chunks, []byte(fmt.Sprint("c", i)))
	}
	ctx := context.Background()
	if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "big", Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	for start := int64(-12); start <= 12; start++ {
		p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "big", Start: start, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		from := start
		if from < 0 {
			from = max(0, 11+start)
		}
		for i, c := range p.Chunks {
			if want := fmt.Sprint("c", from+int64(i)); c.Index != from+int64(i) || string(c.Data) != want {
				t.Fatalf("read from %d: chunk %d is {%d %q}, want %q", start, i, c.Index, c.Data, want)
			}
		}
		if want := min(3, max(0, 11-from)); int64(len(p.Chunks)) != want {
			t.Fatalf("read from %d: %d chunks, want %d", start, len(p.Chunks), want)
		}
	}
}

// lostAnswerS3 stores conditional puts like S3, and loses the answer to the
// first put of each key: the writer must recognize its own object.
type lostAnswerS3 struct {
	mu      sync.Mutex
	objects map[string]*s3.PutObjectInput
	bodies  map[string][]byte
	lost    map[string]bool
}

func (f *lostAnswerS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := aws.ToString(in.Key)
	if _, ok := f.objects[k]; ok && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "taken"}
	}
	b, _ := io.ReadAll(in.Body)
	f.objects[k], f.bodies[k] = in, b
	if !f.lost[k] {
		f.lost[k] = true
		return nil, &smithy.GenericAPIError{Code: "InternalError", Message: "answer lost"}
	}
	return &s3.PutObjectOutput{}, nil
}

func (f *lostAnswerS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := aws.ToString(in.Key)
	var meta map[string]string
	if o, ok := f.objects[k]; ok {
		meta = o.Metadata
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(f.bodies[k])), Metadata: meta}, nil
}

func (f *lostAnswerS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NotFound"}
	}
	return &s3.HeadObjectOutput{Metadata: o.Metadata}, nil
}

func (f *lostAnswerS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func TestLostAnswerIsNotWrittenTwice(t *testing.T) {
	f := &lostAnswerS3{objects: map[string]*s3.PutObjectInput{}, bodies: map[string][]byte{}, lost: map[string]bool{}}
	s, err := streams.New(streams.Config{S3: f, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := s.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_x", Name: "s", Chunks: [][]byte{[]byte(fmt.Sprint(i))}}); err != nil {
			t.Fatalf("write %d with its answer lost: %v", i, err)
		}
	}
	p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: "wrun_x", Name: "s"})
	if err != nil || len(p.Chunks) != 3 || len(f.objects) != 3 {
		t.Fatalf("after 3 writes whose answers were lost: %d chunks in %d objects, %v; want 3 in 3", len(p.Chunks), len(f.objects), err)
	}
}

func TestInvalidNames(t *testing.T) {
	s, err := streams.New(streams.Config{S3: &lostAnswerS3{}, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*world.WriteStreamParams{
		{RunID: "wrun_x", Name: "a/b", Chunks: [][]byte{{1}}},
		{RunID: "", Name: "a", Chunks: [][]byte{{1}}},
		{RunID: "wrun/x", Name: "a", Chunks: [][]byte{{1}}},
	} {
		if err := s.WriteStream(context.Background(), p); !errors.Is(err, world.ErrInvalid) {
			t.Fatalf("WriteStream(%q, %q): %v, want ErrInvalid", p.RunID, p.Name, err)
		}
	}
}
