package lambdaemu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// echoBin is the echo bootstrap (testdata/echo), built once per test binary by buildEcho.
var echoBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if echoBin.dir != "" {
		os.RemoveAll(echoBin.dir)
	}
	os.Exit(code)
}

// buildEcho builds testdata/echo like a real Lambda bootstrap (static, -tags lambda.norpc) into a
// temporary directory, once, and returns its path.
func buildEcho(t testing.TB) string {
	t.Helper()
	echoBin.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			echoBin.err = fmt.Errorf("go tool not found: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "lambdaemu-echo-")
		if err != nil {
			echoBin.err = err
			return
		}
		echoBin.dir = dir
		out := filepath.Join(dir, "bootstrap")
		cmd := exec.Command(goTool, "build", "-tags", "lambda.norpc", "-o", out, "./testdata/echo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		start := time.Now()
		if b, err := cmd.CombinedOutput(); err != nil {
			echoBin.err = fmt.Errorf("go build ./testdata/echo: %v\n%s", err, b)
			return
		}
		echoBin.path = out
		t.Logf("built the echo bootstrap in %s", time.Since(start).Round(time.Millisecond))
	})
	if echoBin.err != nil {
		t.Fatal(echoBin.err)
	}
	return echoBin.path
}

// lineWriter forwards a process's output to the test log, line by line, until the test ends.
type lineWriter struct {
	mu   sync.Mutex
	t    testing.TB
	buf  bytes.Buffer
	done bool
}

func newLineWriter(t testing.TB, prefix string) *lineWriter {
	w := &lineWriter{t: t}
	w.buf.WriteString(prefix)
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	for _, c := range p {
		if c == '\n' {
			w.t.Log(w.buf.String())
			w.buf.Reset()
			continue
		}
		w.buf.WriteByte(c)
	}
	return len(p), nil
}

// echoReply is the echo bootstrap's response.
type echoReply struct {
	BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
	Echo              struct {
		RequestID   string            `json:"requestId"`
		FunctionARN string            `json:"functionArn"`
		DeadlineMs  int64             `json:"deadlineMs"`
		TraceID     string            `json:"traceId"`
		PID         int               `json:"pid"`
		Invocations int               `json:"invocations"`
		Records     int               `json:"records"`
		Bodies      []string          `json:"bodies"`
		Env         map[string]string `json:"env"`
	} `json:"echo"`
}

func sqsPayload(t testing.TB, bodies ...string) []byte {
	t.Helper()
	ev := events.SQSEvent{}
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i+1), Body: b, EventSource: "aws:sqs"})
	}
	p, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
