package streams_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestCopiedObjectRefused: a stream object copied, with its metadata, from
// another run's stream (or from another stream or index of the same run)
// makes ReadStream fail with world.ErrCorrupt naming the object; it never
// returns the other stream's chunks as this one's.
func TestCopiedObjectRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ what, runB, nameB, indexB string }{
		{"another run", "", "user.cHJvZ3Jlc3M", "0000000000000004"},
		{"another stream", "A", "user.b3V0", "0000000000000004"},
		{"another index", "A", "user.cHJvZ3Jlc3M", "0000000000000005"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			f := newMemS3()
			s, err := streams.New(streams.Config{S3: f, Bucket: "b"}, knobs.WithMaxChunksPerObject(4))
			if err != nil {
				t.Fatal(err)
			}
			runA, runB := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
			if tc.runB == "A" {
				runB = runA
			}
			if err := writeBytes(s, runA, "user.cHJvZ3Jlc3M", 1, 2, 3, 4); err != nil {
				t.Fatal(err)
			}
			if err := writeBytes(s, runA, "user.cHJvZ3Jlc3M", 5); err != nil { // index 4, in its own object
				t.Fatal(err)
			}
			if tc.indexB == "0000000000000004" { // the target stream has chunks 0 to 3 of its own
				if err := writeBytes(s, runB, tc.nameB, 6, 7, 8, 9); err != nil {
					t.Fatal(err)
				}
			}
			from := streams.DefaultPrefix + runA + "/user.cHJvZ3Jlc3M/0000000000000004"
			to := streams.DefaultPrefix + runB + "/" + tc.nameB + "/" + tc.indexB
			f.mu.Lock()
			f.objects[to], f.bodies[to] = f.objects[from], f.bodies[from] // copy-object, metadata and all
			f.mu.Unlock()
			start := int64(4)
			if tc.indexB == "0000000000000005" {
				start = 5
			}
			p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: runB, Name: tc.nameB, Start: start})
			if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), to) {
				t.Fatalf("ReadStream of the copy at %s: %+v, %v; want world.ErrCorrupt naming it", to, p, err)
			}
			if p, err := s.ReadStream(ctx, &world.ReadStreamParams{RunID: runA, Name: "user.cHJvZ3Jlc3M", Limit: 5}); err != nil || len(p.Chunks) != 5 {
				t.Fatalf("the original: %+v, %v; want its 5 chunks", p, err)
			}
		})
	}
}
