//go:build integration

package integration

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
)

// faultProxies puts an Injector's proxy in front of the DynamoDB and S3
// emulators and points the function's endpoints at them: the bootstrap's
// requests meet the faults, the test's own do not.
func faultProxies(tb testing.TB, inj *dynamotest.Injector, fc *lambdaemu.FunctionConfig) {
	tb.Helper()
	for service, env := range map[string]string{"DynamoDB": "AWS_ENDPOINT_URL_DYNAMODB", "S3": "AWS_ENDPOINT_URL_S3"} {
		target := os.Getenv(env)
		if target == "" {
			tb.Skipf("%s is not set: the chaos suite injects faults in front of the emulators", env)
		}
		u, err := url.Parse(target)
		if err != nil {
			tb.Fatal(err)
		}
		srv := httptest.NewServer(inj.Proxy(service, u))
		tb.Cleanup(srv.Close)
		fc.Env[env] = srv.URL
	}
}

// chaosSQS is the ESM's SQS client with redeliveries of its own: a share of
// the messages it receives are made visible again, either at once (a second
// delivery while the first is handled) or after a random part of a few
// seconds (a visibility timeout that expires mid-step), so that another
// poller receives them again.
type chaosSQS struct {
	*sqs.Client
	queueURL string
	rate     float64       // share of received messages redelivered
	within   time.Duration // the longest wait before a redelivery

	mu  sync.Mutex
	rng *rand.Rand
	wg  sync.WaitGroup

	duplicates, expiries atomic.Int64 // redeliveries made (the message was still in flight)
}

// redeliverAfter draws whether a received message comes back, and when.
func (c *chaosSQS) redeliverAfter() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rng.Float64() >= c.rate {
		return 0, false
	}
	if c.rng.IntN(2) == 0 {
		return 0, true
	}
	return time.Duration(c.rng.Int64N(int64(c.within))), true
}

func (c *chaosSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.Client.ReceiveMessage(ctx, in, o...)
	if err != nil {
		return out, err
	}
	for _, m := range out.Messages {
		d, ok := c.redeliverAfter()
		if !ok {
			continue
		}
		receipt := aws.ToString(m.ReceiptHandle)
		c.wg.Go(func() {
			time.Sleep(d)
			_, err := c.Client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(c.queueURL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: 0,
			})
			switch {
			case err != nil: // handled and deleted meanwhile
			case d == 0:
				c.duplicates.Add(1)
			default:
				c.expiries.Add(1)
			}
		})
	}
	return out, nil
}

// wait waits for the scheduled redeliveries.
func (c *chaosSQS) wait() { c.wg.Wait() }

// chaosKiller SIGKILLs one busy flow process at a time, every min to max,
// and no sooner than every fewest to most invocations (settled batches,
// the killed ones included), so that a starved machine, which settles
// fewer batches a second, is not killed more often per invocation than a
// fast one; until stopped, and tells the sink when each died.
type chaosKiller struct {
	esm          *lambdaemu.ESM
	sink         *chaosSink
	min, max     time.Duration
	fewest, most int
	rng          *rand.Rand
	kills        atomic.Int64
	stop         chan struct{}
	done         chan struct{}
}

func startKiller(esm *lambdaemu.ESM, sink *chaosSink, seed uint64, lo, hi time.Duration, fewest, most int) *chaosKiller {
	k := &chaosKiller{esm: esm, sink: sink, min: lo, max: hi, fewest: fewest, most: most, rng: rand.New(rand.NewPCG(seed, seed^0x4b111)),
		stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	return k
}

func (k *chaosKiller) loop() {
	defer close(k.done)
	last := 0 // settled batches at the last kill
	for {
		wait := k.min + time.Duration(k.rng.Int64N(int64(k.max-k.min)))
		need := k.fewest + k.rng.IntN(k.most-k.fewest+1)
		for first := true; first || k.esm.Stats().Batches-last < need; first = false {
			t := time.NewTimer(wait)
			select {
			case <-k.stop:
				t.Stop()
				return
			case <-t.C:
			}
			wait = 100 * time.Millisecond // then look at the progress again
		}
		if pid := k.esm.KillOne(k.rng.IntN); pid != 0 {
			k.sink.died(pid, time.Now())
			k.kills.Add(1)
			last = k.esm.Stats().Batches
		}
	}
}

// halt stops killing and returns how many processes were killed.
func (k *chaosKiller) halt() int {
	close(k.stop)
	<-k.done
	return int(k.kills.Load())
}
