package dynamoworld_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// TestStreamsListedFromTheTable: a World's streams are registered in the
// table, so ListStreams reads no S3 listing: none at all for a run that
// ended on the condition that it had no stream (a stream another process
// opened before the end makes that commit read the run again), the head's
// flag and the markers otherwise. A run created before streams were
// registered (its head has no flag) and a run that does not exist are
// listed from S3, streams written without registration included.
func TestStreamsListedFromTheTable(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	m := &dynamotest.Meter{}
	mc := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
	a, err := dynamoworld.New(ctx, dynamotest.Config(mc, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	write := func(w world.Streamer, run, name string) {
		t.Helper()
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: name, Chunks: [][]byte{[]byte("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(run string, want ...string) {
		t.Helper()
		names, err := a.ListStreams(ctx, &world.ListStreamsParams{RunID: run})
		if err != nil || !slices.Equal(names, append([]string{}, want...)) {
			t.Fatalf("ListStreams: %v, %v; want %v", names, err, want)
		}
	}
	end := func(run string) {
		t.Helper()
		mustAppend(t, a, run, world.EventInput{Data: &world.RunCompleted{Output: json.RawMessage(`1`)}})
	}

	t.Run("ended without streams", func(t *testing.T) {
		run := startedRun(t, a)
		end(run)
		m.Reset()
		list(run)
		if n := m.Count("DynamoDB") + m.Count("S3"); n != 0 {
			t.Fatalf("ListStreams of a run that ended without streams made %d requests (%s), want none", n, m.Summary())
		}
	})
	t.Run("opened by another process before the end", func(t *testing.T) {
		run := startedRun(t, a)
		write(b, run, "late")
		m.Reset()
		end(run) // refused on the flag, read again, committed
		if n := m.Count("DynamoDB/TransactWriteItems"); n != 2 {
			t.Fatalf("the run's end took %d transactions (%s), want 2", n, m.Summary())
		}
		m.Reset()
		list(run, "late")
		if m.Count("S3") != 0 || m.Count("DynamoDB") != 1 {
			t.Fatalf("ListStreams: %s; want one Query", m.Summary())
		}
	})
	t.Run("running, streams from two processes", func(t *testing.T) {
		run := startedRun(t, a)
		list(run)
		write(b, run, "zeta")
		write(a, run, "alpha")
		write(b, run, "m:1")
		if err := a.CloseStream(ctx, &world.CloseStreamParams{RunID: run, Name: "closed-unwritten"}); err != nil {
			t.Fatal(err)
		}
		m.Reset()
		list(run, "alpha", "closed-unwritten", "m:1", "zeta")
		if m.Count("S3") != 0 {
			t.Fatalf("ListStreams: %s; want no S3 request", m.Summary())
		}
	})
	t.Run("run from before registration", func(t *testing.T) {
		run := startedRun(t, a)
		// Its head has no flag; a stream was written without registration.
		_, err := c.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(r.Table), UpdateExpression: aws.String("REMOVE os"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#" + run}, "sk": &types.AttributeValueMemberS{Value: "e~"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		unregistered, err := streams.New(streams.Config{S3: c.S3, Bucket: r.Bucket, Prefix: dynamoworld.DefaultPrefix + "streams/"})
		if err != nil {
			t.Fatal(err)
		}
		write(unregistered, run, "old")
		write(b, run, "new")
		fresh, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		for _, w := range []*dynamoworld.World{a, fresh} {
			names, err := w.ListStreams(ctx, &world.ListStreamsParams{RunID: run})
			if err != nil || !slices.Equal(names, []string{"new", "old"}) {
				t.Fatalf("ListStreams: %v, %v; want [new old] from S3", names, err)
			}
		}
		end(run)
		list(run, "new", "old")
	})
	t.Run("no run", func(t *testing.T) {
		run := ids.New(world.PrefixRun)
		write(b, run, "orphan")
		list(run, "orphan")
	})
}
