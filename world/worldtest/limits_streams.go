package worldtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/skeinflow/skein/world"
)

// Streams per run: a write (or a close) that would create a stream when
// its run has MaxStreams already is refused with a *world.LimitError of
// "streams", writing nothing; the run's existing streams take writes and
// closes as before; writers racing to open streams (on two processes'
// Worlds, where the Subject is such a pair) never take a run past the
// bound, and a stream opened by several of them counts once. New must
// configure MaxStreams 4 to 64.

const limitStreams = "streams"

// A run's MaxStreams+1st stream is refused, by a write or a close, and
// nothing already written is lost.
func testLimitStreams(t *testing.T, f *fixture) {
	l := f.limits()
	run := f.startedRun()
	var names []string
	for i := range l.MaxStreams {
		name := fmt.Sprintf("s%02d", i)
		if err := f.streamWrite(run, name, 16); err != nil {
			t.Fatalf("stream %d of MaxStreams %d: %v", i+1, l.MaxStreams, err)
		}
		names = append(names, name)
	}
	refused := func(err error, what string) {
		t.Helper()
		le := wantLimit(t, err, limitStreams, what)
		if le.Max != int64(l.MaxStreams) || le.Size != le.Max+1 || le.RunID != run || le.Code() != world.CodeLimitExceeded {
			t.Fatalf("%s: LimitError %+v, want run %s, Max %d, Size %d", what, le, run, l.MaxStreams, l.MaxStreams+1)
		}
	}
	refused(f.streamWrite(run, "over", 16), "a write opening stream MaxStreams+1")
	refused(f.w.CloseStream(f.ctx, &world.CloseStreamParams{RunID: run, Name: "over2"}), "a close creating stream MaxStreams+1")
	if info, err := f.w.StreamInfo(f.ctx, &world.StreamInfoParams{RunID: run, Name: "over"}); err != nil || info.TailIndex != -1 || info.Done {
		t.Fatalf("StreamInfo of the refused stream: %+v, %v; want nothing written", info, err)
	}
	if err := f.streamWrite(run, names[0], 16); err != nil {
		t.Fatalf("a write to an existing stream of a run at MaxStreams: %v", err)
	}
	f.closeStream(run, names[1])
	got, err := f.w.ListStreams(f.ctx, &world.ListStreamsParams{RunID: run})
	if err != nil || !slices.Equal(got, names) {
		t.Fatalf("ListStreams: %v, %v; want the %d streams written", got, err, len(names))
	}
	if all, _ := f.readAllChunks(run, names[0]); len(all) != 2 {
		t.Fatalf("stream %s holds %d chunks, want 2", names[0], len(all))
	}
	if all, done := f.readAllChunks(run, names[1]); len(all) != 1 || !done {
		t.Fatalf("stream %s holds %d chunks (done %v), want 1, closed", names[1], len(all), done)
	}
	if err := f.streamWrite(f.startedRun(), "over", 16); err != nil {
		t.Fatalf("a stream of another run: %v", err)
	}
}

// Writers racing to open streams of a run that has MaxStreams/2 already,
// two writers to each of MaxStreams new names, open exactly MaxStreams/2
// of them: both writers of a name opened succeed (it counts once), both
// writers of the others are refused with a *world.LimitError, and the run
// lists the streams it holds, no more.
func testLimitStreamsRace(t *testing.T, f *fixture) {
	l := f.limits()
	run := f.startedRun()
	half := l.MaxStreams / 2
	var names []string
	for i := range half {
		names = append(names, fmt.Sprintf("a%02d", i))
		if err := f.streamWrite(run, names[i], 8); err != nil {
			t.Fatal(err)
		}
	}
	racer := func(i int) string { return fmt.Sprintf("r%02d", i/2) }
	errs := race(2*l.MaxStreams, func(i int) error { return f.streamWrite(run, racer(i), 8) })
	opened := map[string]int{}
	for i, err := range errs {
		var le *world.LimitError
		switch {
		case err == nil:
			opened[racer(i)]++
		case !errors.As(err, &le) || le.Limit != limitStreams:
			t.Fatalf("writer %d (stream %s): %v, want nil or a *world.LimitError of %q", i, racer(i), err, limitStreams)
		}
	}
	for i := 0; i < 2*l.MaxStreams; i += 2 {
		name := racer(i)
		switch n := opened[name]; n {
		case 2:
			names = append(names, name)
		case 1:
			t.Fatalf("one of the two writers of stream %s was refused, the other accepted: a stream counts once", name)
		}
		all, _ := f.readAllChunks(run, name)
		if len(all) != opened[name] {
			t.Fatalf("stream %s holds %d chunks, want the %d accepted", name, len(all), opened[name])
		}
	}
	slices.Sort(names)
	got, err := f.w.ListStreams(f.ctx, &world.ListStreamsParams{RunID: run})
	if err != nil || len(names) != l.MaxStreams || !slices.Equal(got, names) {
		t.Fatalf("%d streams opened of MaxStreams %d (%d before the race); ListStreams %v, %v; want exactly the bound, listed",
			len(names), l.MaxStreams, half, got, err)
	}
}
