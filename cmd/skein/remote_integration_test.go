//go:build integration

package main

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// fakeStacks answers DescribeStacks with one stack's outputs.
type fakeStacks struct {
	name    string
	outputs map[string]string
}

func (f fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != f.name {
		return nil, fmt.Errorf("unexpected stack %q", aws.ToString(in.StackName))
	}
	var outs []cftypes.Output
	for k, v := range f.outputs {
		outs = append(outs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{StackName: in.StackName, Outputs: outs}}}, nil
}

// The CLI on a deployed stack (the emulators), by flags and by stack
// outputs: it lists, shows and reads a run a worker runs on the stack,
// resumes its hook, follows its stream to its end, cancels another and
// reruns that one.
func TestCLIOnDeployedStack(t *testing.T) {
	t.Parallel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, queueURL := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(context.Background(), dynamotest.Config(c, res, queueURL))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := workflow.NewRegistry().MustRegister(ticker, tick)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	token := fmt.Sprint("cli-", time.Now().UnixNano())
	run, err := ticker.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()
	for {
		if _, err := wk.Client().GetHookByToken(ctx, token); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the hook never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}

	flags := []string{"-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket}
	on := func(args ...string) result { return cli(append(append([]string{}, flags...), args...)...) }
	on("runs", "list").expect(t, 0, id, "ticker", "running")
	on("runs", "show", id).expect(t, 0, "Status     running", "hook "+token)
	on("runs", "events", id).expect(t, 0, "run_created", "step_completed", "hook_created")
	on("hooks", "list").expect(t, 0, token)
	on("streams", "read", id, "-name", "ticks").expect(t, 0, "tick 1")
	on("runs", "show", "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T").expect(t, 1, "not found in table "+res.Table)

	// By the stack's outputs (a fake CloudFormation), flags after the command.
	var out, errb syncBuffer
	e := &env{stdout: &out, stderr: &errb, stacks: func(aws.Config) stackDescriber {
		return fakeStacks{name: "orders", outputs: map[string]string{"TableName": res.Table, "QueueUrl": queueURL, "BucketName": res.Bucket}}
	}}
	if code := runWith(ctx, e, []string{"hooks", "resume", token, "7", "-stack", "orders"}); code != 0 {
		t.Fatalf("hooks resume -stack: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "resumed hook") {
		t.Errorf("hooks resume: %s", out.String())
	}
	if got, err := run.Result(ctx); err != nil || got != 2 {
		t.Fatalf("ticker result: %d, %v", got, err)
	}
	r := on("streams", "read", id, "-name", "ticks", "-follow")
	r.expect(t, 0)
	if r.out != "tick 1\ntick 2\n" {
		t.Errorf("streams read -follow: %q", r.out)
	}
	on("runs", "show", id).expect(t, 0, "Status     completed", "Output     2")

	other, err := ticker.Start(ctx, wk.Client(), token+"-other")
	if err != nil {
		t.Fatal(err)
	}
	on("runs", "cancel", other.ID(), "-reason", "from the CLI").expect(t, 0, "cancelled run "+other.ID())
	if _, err := other.Result(ctx); err == nil {
		t.Fatal("the cancelled run succeeded")
	}
	on("runs", "list", "-status", "cancelled").expect(t, 0, other.ID())
	on("runs", "rerun", other.ID()).expect(t, 0, "started run", "the input of "+other.ID(), "table "+res.Table)
}
