package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

type foo struct {
	Foo string `json:"foo"`
}

// chunkText renders chunks for comparison: bytes as text, JSON as JSON.
func chunkText(cs []sdk.StreamChunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		if c.JSON {
			out[i] = "json:" + string(c.Data)
		} else {
			out[i] = "bytes:" + string(c.Data)
		}
	}
	return out
}

func readAll(t *testing.T, c *sdk.Client, runID string, opts sdk.StreamOptions) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []sdk.StreamChunk
	for ch, err := range c.ReadStream(ctx, runID, opts) {
		if err != nil {
			t.Fatalf("read %+v: %v", opts, err)
		}
		got = append(got, ch)
	}
	return chunkText(got)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOutputStream(t *testing.T) {
	t.Parallel()
	write := sdk.NewStep("write", func(ctx context.Context, in struct {
		NS    string
		Bytes string
		JSON  *foo
		Close bool
	}) (struct{}, error) {
		w := sdk.Writer(ctx, in.NS)
		if in.JSON != nil {
			if err := w.WriteJSON(in.JSON); err != nil {
				return struct{}{}, err
			}
		} else if _, err := w.Write([]byte(in.Bytes)); err != nil {
			return struct{}{}, err
		}
		if in.Close {
			return struct{}{}, w.Close()
		}
		return struct{}{}, nil
	})
	type w = struct {
		NS    string
		Bytes string
		JSON  *foo
		Close bool
	}
	wf := sdk.New("outputStream", func(ctx sdk.Context, _ struct{}) (string, error) {
		for _, in := range []w{
			{Bytes: "Hello, world!"}, {NS: "test", Bytes: "Hello, named stream!"},
		} {
			if _, err := write.Call(ctx, in); err != nil {
				return "", err
			}
		}
		if err := sdk.Sleep(ctx, 50*time.Millisecond); err != nil {
			return "", err
		}
		for _, in := range []w{
			{JSON: &foo{"test"}, Close: true}, {NS: "test", JSON: &foo{"bar"}, Close: true},
		} {
			if _, err := write.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "done", nil
	})
	e := newEnv(t, wf, write)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	// Read live, from before the first chunk exists.
	live := readAll(t, e.client, run.ID(), sdk.StreamOptions{})
	if got, err := run.Result(ctx); err != nil || got != "done" {
		t.Fatalf("result %q, %v", got, err)
	}
	for _, tc := range []struct {
		ns    string
		start int64
		limit int
		want  []string
	}{
		{"", 0, 0, []string{"bytes:Hello, world!", `json:{"foo":"test"}`}},
		{"test", 0, 0, []string{"bytes:Hello, named stream!", `json:{"foo":"bar"}`}},
		{"", 1, 0, []string{`json:{"foo":"test"}`}},
		{"test", 1, 0, []string{`json:{"foo":"bar"}`}},
		{"", -1, 0, []string{`json:{"foo":"test"}`}},
		{"test", -1, 0, []string{`json:{"foo":"bar"}`}},
		// Limit ends the read after that many chunks.
		{"", 0, 1, []string{"bytes:Hello, world!"}},
		{"test", -2, 1, []string{"bytes:Hello, named stream!"}},
		{"", 0, 5, []string{"bytes:Hello, world!", `json:{"foo":"test"}`}},
	} {
		opts := sdk.StreamOptions{Namespace: tc.ns, Start: tc.start, Limit: tc.limit}
		if got := readAll(t, e.client, run.ID(), opts); !equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", opts, got, tc.want)
		}
	}
	if !equal(live, []string{"bytes:Hello, world!", `json:{"foo":"test"}`}) {
		t.Errorf("live read %q", live)
	}
	for ns, want := range map[string]int64{"": 1, "test": 1, "unknown": -1} {
		info, err := e.client.StreamInfo(ctx, run.ID(), ns)
		if err != nil || info.TailIndex != want {
			t.Errorf("tail of %q = %+v, %v; want %d", ns, info, err, want)
		}
	}
	nss, err := e.client.ListStreams(ctx, run.ID())
	if err != nil || !equal(nss, []string{"", "test"}) {
		t.Errorf("streams %q, %v", nss, err)
	}
	var v foo
	for ch, err := range e.client.ReadStream(ctx, run.ID(), sdk.StreamOptions{Start: 1}) {
		if err != nil || ch.Decode(&v) != nil || v.Foo != "test" {
			t.Errorf("decode %+v %v", ch, err)
		}
	}
}

func TestStreamInsideSteps(t *testing.T) {
	t.Parallel()
	writer := sdk.NewStep("writer", func(ctx context.Context, _ struct{}) (struct{}, error) {
		d := sdk.Writer(ctx, "")
		for _, s := range []string{"Hello from step!", "Second message"} {
			if _, err := d.Write([]byte(s)); err != nil {
				return struct{}{}, err
			}
		}
		n := sdk.Writer(ctx, "step-ns")
		if err := n.WriteJSON(map[string]string{"message": "Hello from named stream in step!"}); err != nil {
			return struct{}{}, err
		}
		if err := n.WriteJSON(map[string]int{"counter": 42}); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, nil // the run's end closes the streams
	})
	wf := sdk.New("streamInStep", func(ctx sdk.Context, _ struct{}) (string, error) {
		_, err := writer.Call(ctx, struct{}{})
		return "ok", err
	})
	e := newEnv(t, wf, writer)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, e.client, run.ID(), sdk.StreamOptions{}); !equal(got, []string{"bytes:Hello from step!", "bytes:Second message"}) {
		t.Errorf("default stream %q", got)
	}
	got := readAll(t, e.client, run.ID(), sdk.StreamOptions{Namespace: "step-ns"})
	if !equal(got, []string{`json:{"message":"Hello from named stream in step!"}`, `json:{"counter":42}`}) {
		t.Errorf("named stream %q", got)
	}
	if _, err := sdk.Writer(context.Background(), "").Write([]byte("x")); err == nil {
		t.Error("a writer outside a step wrote")
	}
}

// TestStreamClosedNamesNamespace: a write to a stream another step closed
// fails with an error naming the namespace the code used (not its stored
// name) and matching world.ErrConflict.
func TestStreamClosedNamesNamespace(t *testing.T) {
	t.Parallel()
	closes := sdk.NewStep("log-and-close", func(ctx context.Context, _ int) (int, error) {
		w := sdk.Writer(ctx, "log")
		if _, err := w.Write([]byte("first")); err != nil {
			return 0, err
		}
		return 0, w.Close()
	})
	writesAgain := sdk.NewStep("log-again", func(ctx context.Context, _ int) (string, error) {
		_, err := sdk.Writer(ctx, "log").Write([]byte("second"))
		if err == nil {
			return "", nil
		}
		if !errors.Is(err, world.ErrConflict) {
			return "", sdk.Fatal(fmt.Errorf("not a conflict: %w", err))
		}
		return err.Error(), nil
	})
	wf := sdk.New("closed-stream", func(ctx sdk.Context, _ int) (string, error) {
		if _, err := closes.Call(ctx, 0); err != nil {
			return "", err
		}
		return writesAgain.Call(ctx, 0)
	})
	e := newEnv(t, wf, closes, writesAgain)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`stream "log" of run ` + run.ID() + ` is closed`, "stays closed for the rest of the run"} {
		if !strings.Contains(got, want) {
			t.Errorf("error %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "user.") {
		t.Errorf("error %q shows the stored stream name", got)
	}
}
