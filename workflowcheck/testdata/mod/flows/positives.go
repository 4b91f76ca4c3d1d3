package flows

import (
	crand "crypto/rand"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"example.com/config"
	"github.com/google/uuid"
	"github.com/skeinflow/skein/workflow"
	"golang.org/x/sync/errgroup"
)

var (
	counter  int
	settings = map[string]string{"mode": "fast"}
	clock    = time.Now
	limits   struct{ Max int }
)

// clockAndTimers: the time package's clock, sleeps and timers.
var clockAndTimers = workflow.New("clock", func(ctx workflow.Context, since time.Time) (int, error) {
	_ = time.Now()                           // want `time.Now reads the machine clock: use ctx.Now\(\), the workflow's time`
	_ = time.Since(since)                    // want `time.Since reads the machine clock: use ctx.Now\(\).Sub\(t\)`
	_ = time.Until(since)                    // want `time.Until .*use t.Sub\(ctx.Now\(\)\)`
	time.Sleep(time.Second)                  // want `time.Sleep .*use workflow.Sleep\(ctx, d\)`
	_ = time.After(time.Second)              // want `time.After is a real-time timer: use workflow.NewTimer`
	_ = time.NewTimer(time.Second)           // want `time.NewTimer is a real-time timer`
	_ = time.Tick(time.Second)               // want `time.Tick is a real-time ticker: loop over workflow.Sleep`
	_ = time.NewTicker(time.Second)          // want `time.NewTicker is a real-time ticker`
	time.AfterFunc(time.Second, nil)         // want `time.AfterFunc runs its function on another goroutine`
	_, _ = time.LoadLocation("Europe/Paris") // want `time.LoadLocation reads the machine's time zone database`
	now := time.Now                          // want `time.Now used as a value: time.Now reads the machine clock`
	_ = now()
	time.AfterFunc(time.Second, func() { // want `time.AfterFunc runs`
		_ = workflow.Sleep(ctx, time.Second) // want `workflow call on another goroutine`
	})
	return 0, nil
})

// randomness: the process's random sources and crypto/rand.
var randomness = workflow.New("random", func(ctx workflow.Context, n int) (int, error) {
	_ = rand.Intn(n)   // want `rand.Intn draws from the process's random source: use ctx.Rand\(\)`
	_ = randv2.IntN(n) // want `rand.IntN draws from the process's random source`
	buf := make([]byte, 8)
	_, _ = crand.Read(buf) // want `rand.Read draws fresh randomness on every replay: do it in a step`
	_ = crand.Text()       // want `rand.Text draws fresh randomness`
	_ = crand.Reader       // want `reads package-level variable Reader`
	_ = uuid.New()         // want `uuid.New draws a new random ID on every replay: use ctx.NewID\(\)`
	_ = uuid.NewString()   // want `uuid.NewString draws a new random ID`
	_, _ = uuid.Parse("")
	return 0, nil
})

// concurrency: goroutines, channels and select.
var concurrency = workflow.New("concurrency", func(ctx workflow.Context, n int) (int, error) {
	ch := make(chan int, 1)
	go func() { // want `go statement: goroutines run in an order replay cannot repeat; start steps with Step.Go`
		ch <- n // want `channel send: wait on futures instead`
	}()
	v := <-ch // want `channel receive: wait on futures instead`
	select {  // want `select waits on channels .*use workflow.Select on futures`
	case v = <-ch: // the select's finding stands for its cases
	case ch <- v:
	default:
	}
	for x := range ch { // want `ranging over a channel receives from it`
		v += x
	}
	return v, nil
})

// escapes: workflow calls from closures that run on other goroutines.
var escapes = workflow.New("escapes", func(ctx workflow.Context, n int) (int, error) {
	go func() { // want `go statement`
		_, _ = double.Call(ctx, n) // want `workflow call on another goroutine: the workflow API belongs to the workflow's own goroutine .*WORKFLOW_API_MISUSE`
	}()
	sleeper := func() {
		_ = workflow.Sleep(ctx, time.Second) // want `workflow call on another goroutine`
	}
	go sleeper() // want `go statement`
	rebound := func() {}
	rebound = func() {
		_ = workflow.Sleep(ctx, time.Second) // not reported: which literal runs is not known
	}
	go rebound()           // want `go statement`
	go double.Call(ctx, n) // want `go statement` `workflow call on another goroutine`
	var wg sync.WaitGroup
	wg.Go(func() { // want `sync.WaitGroup.Go starts a goroutine`
		_ = ctx.Now() // want `workflow call on another goroutine`
	})
	var g errgroup.Group
	g.Go(func() error { // want `errgroup.Group.Go starts a goroutine`
		_, err := double.Call(ctx, n) // want `workflow call on another goroutine`
		return err
	})
	return n, g.Wait()
})

// maps: ranging over a map or its iterators.
var mapOrder = workflow.New("maps", func(ctx workflow.Context, prices map[string]int) (int, error) {
	total := 0
	for sku := range prices { // want `ranging over a map visits its keys in a different order on each replay: range over the sorted keys`
		n, _ := double.Call(ctx, prices[sku])
		total += n
	}
	for k := range maps.Keys(prices) { // want `maps.Keys yields in a different order on each replay`
		_ = k
	}
	for _, v := range maps.All(prices) { // want `maps.All yields`
		total += v
	}
	return total, nil
})

// io: the file system, the network, processes, the standard streams.
var io_ = workflow.New("io", func(ctx workflow.Context, path string) (string, error) {
	b, _ := os.ReadFile(path)                          // want `os.ReadFile does I/O, whose result can differ on replay: do it in a step \(workflow.NewStep\)`
	_ = os.Getenv("HOME")                              // want `os.Getenv does I/O`
	_ = exec.Command("true").Run()                     // want `exec.Command does I/O` `exec.Cmd.Run does I/O`
	_, _ = net.Dial("tcp", "example.com:80")           // want `net.Dial does I/O`
	resp, _ := http.Get("https://example.com")         // want `http.Get does I/O`
	_, _ = io.ReadAll(resp.Body)                       // want `io.ReadAll does I/O`
	_, _ = http.DefaultClient.Do(nil)                  // want `reads package-level variable DefaultClient` `http.Client.Do does I/O`
	_, _ = io.Copy(os.Stdout, strings.NewReader(path)) // want `io.Copy does I/O` `reads package-level variable Stdout`
	fmt.Println(string(b))                             // want `fmt.Println writes again on every replay: log with ctx.Logger\(\)`
	log.Printf("read %s", path)                        // want `log.Printf writes again`
	slog.Info("read", "path", path)                    // want `slog.Info writes again`
	return string(b), nil
})

// globals: package-level variables, written and read.
var globals = workflow.New("globals", func(ctx workflow.Context, n int) (string, error) {
	counter++                 // want `workflow code writes package-level variable counter: state outside the run's log`
	counter = n               // want `writes package-level variable counter`
	settings["mode"] = "slow" // want `writes package-level variable settings`
	limits.Max = n            // want `writes package-level variable limits`
	for counter = range n {   // want `writes package-level variable counter`
	}
	p := &counter // want `takes the address of package-level variable counter`
	_ = p
	mode := settings["mode"]         // want `workflow code reads package-level variable settings: its value is not in the run's log`
	_ = clock()                      // want `reads package-level variable clock`
	config.Region = "x"              // want `writes package-level variable Region`
	return mode + config.Region, nil // want `reads package-level variable Region`
})

// named is a workflow function declared as a function; methods count too.
func named(ctx workflow.Context, n int) (int, error) {
	return n + rand.Int(), nil // want `rand.Int draws`
}

type service struct{}

func (service) run(n int, ctx workflow.Context) time.Time {
	return time.Now() // want `time.Now reads the machine clock`
}
