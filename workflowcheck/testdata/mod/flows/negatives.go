package flows

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"example.com/config"
	"github.com/google/uuid"
	"github.com/skeinflow/skein/workflow"
)

// ErrRejected is a sentinel error: workflows read it freely.
var ErrRejected = errors.New("rejected")

const maxItems = 10

// double is a step: its body runs once per attempt, outside replay, and
// may do anything.
var double = workflow.NewStep("double", func(ctx context.Context, n int) (int, error) {
	if os.Getenv("SLOW") != "" {
		time.Sleep(time.Millisecond)
	}
	go func() {}()
	return 2 * n, nil
}, workflow.StepOptions{MaxRetries: 2})

var defaults = workflow.StepOptions{MaxRetries: 5}

var child = workflow.New("child", func(ctx workflow.Context, n int) (int, error) { return n, nil })

// clean is deterministic workflow code: nothing in it is reported.
var clean = workflow.New("clean", func(ctx workflow.Context, prices map[string]int) (string, error) {
	start := ctx.Now()
	_ = ctx.Rand().IntN(10)
	_ = ctx.NewID()
	ctx.Logger().Info("started", "at", start.In(time.UTC))
	if err := workflow.Sleep(ctx, time.Hour); err != nil {
		return "", err
	}
	_ = ctx.Now().Sub(start)
	total := 0
	for _, sku := range slices.Sorted(maps.Keys(prices)) {
		n, err := double.Call(ctx, prices[sku])
		if err != nil {
			return "", err
		}
		total += n
	}
	futures := []workflow.Future[int]{double.Go(ctx, 1), double.Go(ctx, 2)}
	if _, err := workflow.All(ctx, futures...); err != nil && !errors.Is(err, ErrRejected) && !errors.Is(err, io.EOF) {
		return "", config.ErrMissing
	}
	if _, err := child.Call(ctx, maxItems); err != nil {
		return "", err
	}
	_ = defaults.MaxRetries
	items := []string{"b", "a"}
	sort.Slice(items, func(i, j int) bool { return items[i] < items[j] })
	for i, s := range items {
		items[i] = strings.ToUpper(s)
	}
	for i := range maxItems {
		total += i
	}
	u, _ := url.Parse("https://example.com/" + items[0])
	_ = http.StatusText(http.StatusOK)
	_ = os.IsNotExist(nil)
	h := http.Header{}
	h.Set("k", "v")
	enc := base64.StdEncoding.EncodeToString([]byte(u.Path))
	// A step body inside workflow code is not workflow code either.
	inline := workflow.NewStep("inline", func(ctx context.Context, s string) (string, error) {
		return s + time.Now().String(), nil
	})
	_ = inline
	local := 0
	bump := func() { local++ }
	bump()
	if uuid.Nil == (uuid.UUID{}) { // a library's variable
		local++
	}
	approval, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: enc}).Receive(ctx)
	return approval + describe(total+local), err
})

// suppressed shows the directive on the line and on the line above.
var suppressed = workflow.New("suppressed", func(ctx workflow.Context, n int) (int, error) {
	_ = time.Now() //skein:nondeterministic-ok only logged, never decides a call
	//skein:nondeterministic-ok read once at deploy time, the same for every replay
	_ = os.Getenv("TABLE")
	// want +1 `//skein:nondeterministic-ok needs a reason`
	//skein:nondeterministic-ok
	_ = time.Now() // want `time.Now reads the machine clock`
	return n, nil
})

// notWorkflow is ordinary code: it takes no workflow.Context.
func notWorkflow() {
	ch := make(chan time.Time)
	go func() { ch <- time.Now() }()
	<-ch
	for k := range map[string]int{} {
		_ = k
	}
}
