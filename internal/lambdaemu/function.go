package lambdaemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by Invoke after Close.
var ErrClosed = errors.New("lambdaemu: function closed")

// FunctionConfig describes one function's execution environment.
type FunctionConfig struct {
	// Bootstrap is the executable to run (required), built like the real one:
	// CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap.
	Bootstrap string
	// Launcher, when set, is a command prefix that runs Bootstrap: the process started is Launcher[0]
	// with the arguments Launcher[1:] and then Bootstrap's absolute path. It runs a bootstrap built for
	// another architecture under user-mode emulation, such as []string{"/path/to/qemu-aarch64-static"}
	// for the arm64 bootstrap Lambda deploys (qemu named explicitly: no binfmt_misc registration).
	// Launcher[0] is looked up in this process's PATH when it holds no path separator. Everything else
	// is as without it: the function's environment (variables for the launcher itself, such as QEMU_*,
	// go in Env), Bootstrap's directory as working directory, the deadlines, and the accounting (cold
	// starts, init duration, timeouts, crashes). PID reports the launcher's process, which qemu-user
	// shares with the program it runs; it leads its own process group, which a timeout, Kill or Close
	// kills whole, so a launcher that runs the bootstrap as a child (a script without exec) dies with
	// it. With a Launcher, Bootstrap need only be a regular file. Default: Bootstrap runs directly.
	Launcher []string
	// Name is AWS_LAMBDA_FUNCTION_NAME and part of the ARN. Default "function".
	Name string
	// Timeout is the function timeout; default 3 s (Lambda's default).
	Timeout time.Duration
	// MemorySize in MB, for AWS_LAMBDA_FUNCTION_MEMORY_SIZE; default 128.
	MemorySize int
	// Env is the function's environment (template variables plus whatever the test adds, such as
	// endpoints and credentials). It is applied over the variables Lambda sets.
	Env map[string]string
	// PassEnv copies these variables from the host environment when they are set; a name ending in
	// "*" is a prefix. See AWSPassEnv.
	PassEnv []string
	// LogFormat sets AWS_LAMBDA_LOG_FORMAT (Text or JSON) when not empty.
	LogFormat string
	// Region (AWS_REGION, AWS_DEFAULT_REGION and the ARN); default us-east-1. AccountID for the ARN;
	// default 000000000000.
	Region    string
	AccountID string
	// InitTimeout bounds the init phase (process start to the first GET /next); default 10 s, as Lambda.
	InitTimeout time.Duration
	// Stdout and Stderr receive the process's output (its logs); default: discarded.
	Stdout, Stderr io.Writer
}

// AWSPassEnv lists the host variables a test usually passes to the bootstrap: endpoints, credentials,
// a CA bundle (passed only when some endpoint uses TLS) and the S3 path-style switch. Lambda would
// supply credentials from the function's role.
func AWSPassEnv() []string {
	return []string{"AWS_ENDPOINT_URL*", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_CA_BUNDLE", "SKEIN_S3_PATH_STYLE", "GOCOVERDIR"}
}

func (c FunctionConfig) withDefaults() (FunctionConfig, error) {
	if c.Bootstrap == "" {
		return c, errors.New("lambdaemu: FunctionConfig.Bootstrap is required")
	}
	abs, err := filepath.Abs(c.Bootstrap)
	if err != nil {
		return c, err
	}
	if st, err := os.Stat(abs); err != nil {
		return c, fmt.Errorf("lambdaemu: bootstrap: %w", err)
	} else if !st.Mode().IsRegular() {
		return c, fmt.Errorf("lambdaemu: bootstrap %s is not a regular file", abs)
	} else if st.Mode()&0o111 == 0 && len(c.Launcher) == 0 {
		return c, fmt.Errorf("lambdaemu: bootstrap %s is not an executable file", abs)
	}
	c.Bootstrap = abs
	if len(c.Launcher) > 0 {
		// A copy, with the program resolved now: the process runs in Bootstrap's directory, where a
		// relative path would mean something else.
		launcher := slices.Clone(c.Launcher)
		if launcher[0] == "" {
			return c, errors.New("lambdaemu: FunctionConfig.Launcher[0] is empty")
		}
		if launcher[0], err = resolveLauncher(launcher[0]); err != nil {
			return c, err
		}
		c.Launcher = launcher
	}
	if c.Name == "" {
		c.Name = "function"
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultFunctionTimeout
	}
	if c.MemorySize <= 0 {
		c.MemorySize = defaultMemorySize
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.AccountID == "" {
		c.AccountID = "000000000000"
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = 10 * time.Second
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return c, nil
}

// resolveLauncher returns the absolute path of an executable launcher: prog itself when it holds a
// path separator, else its match in PATH.
func resolveLauncher(prog string) (string, error) {
	path := prog
	if filepath.Base(prog) == prog {
		p, err := exec.LookPath(prog)
		if err != nil {
			return "", fmt.Errorf("lambdaemu: launcher: %w", err)
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("lambdaemu: launcher: %w", err)
	} else if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("lambdaemu: launcher %s is not an executable file", abs)
	}
	return abs, nil
}

// command is the process that runs the bootstrap: the bootstrap itself, or the launcher with the
// bootstrap as its last argument.
func (c FunctionConfig) command() *exec.Cmd {
	if len(c.Launcher) == 0 {
		return exec.Command(c.Bootstrap)
	}
	return exec.Command(c.Launcher[0], slices.Concat(c.Launcher[1:], []string{c.Bootstrap})...)
}

// FunctionConfig returns the execution environment the mapping's function declares, running bootstrap.
func (m *Mapping) FunctionConfig(bootstrap string) FunctionConfig {
	env := make(map[string]string, len(m.Function.Env))
	for k, v := range m.Function.Env {
		env[k] = v
	}
	return FunctionConfig{
		Bootstrap:  bootstrap,
		Name:       m.FunctionID,
		Timeout:    m.Function.Timeout,
		MemorySize: m.Function.MemorySize,
		Env:        env,
		LogFormat:  m.Function.LogFormat,
	}
}

// FunctionStats counts what happened to a Function.
type FunctionStats struct {
	Invocations  int // invocations delivered to a runtime
	ColdStarts   int // processes started
	Timeouts     int // invocations killed at their deadline
	Crashes      int // processes that exited mid-invocation (Kill included)
	InitFailures int // processes that exited or timed out before asking for work
	// LastInitDuration is the latest cold start: process start to its first GET /next.
	LastInitDuration time.Duration
}

// Function is one execution environment of a function: at most one process, one invocation at a
// time. The first Invoke starts the process (a cold start); later ones reuse it until it times out,
// crashes or is killed, after which the next Invoke starts a new one.
type Function struct {
	cfg FunctionConfig
	arn string

	invokeMu sync.Mutex // one invocation at a time

	mu       sync.Mutex
	sb       *sandbox
	closed   bool
	inflight string
	stats    FunctionStats
}

type sandbox struct {
	api     *RuntimeAPI
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed

	// Touched only by the Invoke holding invokeMu.
	delivered int // invocations handed to the process
	served    int // invocations it answered
}

// NewFunction checks cfg; the process starts with the first Invoke.
func NewFunction(cfg FunctionConfig) (*Function, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Function{
		cfg: cfg,
		arn: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", cfg.Region, cfg.AccountID, cfg.Name),
	}, nil
}

// ARN is the function ARN passed as Lambda-Runtime-Invoked-Function-Arn.
func (f *Function) ARN() string { return f.arn }

// Stats returns a snapshot of the counters.
func (f *Function) Stats() FunctionStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// InFlight is the request ID of the invocation the process is running ("" when idle).
func (f *Function) InFlight() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight
}

// PID is the current process's ID (0 when none runs): the bootstrap's, or with a Launcher the
// launcher's.
func (f *Function) PID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sb == nil || f.sb.cmd.Process == nil {
		return 0
	}
	return f.sb.cmd.Process.Pid
}

// Kill sends SIGKILL to the process, as a crash or an OOM kill would, and waits until it has exited.
// An invocation in flight ends with Runtime.ExitError; the next Invoke is a cold start.
func (f *Function) Kill() error {
	f.mu.Lock()
	sb := f.sb
	f.mu.Unlock()
	if sb == nil {
		return nil
	}
	if err := killProcess(sb.cmd); err != nil {
		return err
	}
	<-sb.exited
	return nil
}

// Close kills the process and refuses further invocations.
func (f *Function) Close() error {
	f.mu.Lock()
	f.closed = true
	sb := f.sb
	f.sb = nil
	f.mu.Unlock()
	if sb != nil {
		f.stop(sb)
	}
	return nil
}

// Invoke runs one invocation with deadline = delivery + Timeout and returns how it ended: a
// response payload, or a FunctionError in Response.Err (an error response, a panic, a timeout, a
// crash). The error return is for the harness (ctx ended, the bootstrap cannot be started, Close).
// When ctx ends mid-invocation the process is killed, since it would still be running the request.
func (f *Function) Invoke(ctx context.Context, payload []byte) (*Response, error) {
	f.invokeMu.Lock()
	defer f.invokeMu.Unlock()

	req := newRequest(Invocation{Payload: payload, Timeout: f.cfg.Timeout, FunctionARN: f.arn})
	var (
		sb   *sandbox
		cold bool
	)
	for attempt := 0; ; attempt++ {
		var err error
		sb, cold, err = f.sandbox()
		if err != nil {
			return nil, err
		}
		var initTimer *time.Timer
		var initTimeout <-chan time.Time
		if cold {
			initTimer = time.NewTimer(time.Until(sb.started.Add(f.cfg.InitTimeout)))
			initTimeout = initTimer.C
		}
		err = sb.api.deliver(ctx, req, sb.exited, initTimeout)
		if initTimer != nil {
			initTimer.Stop()
		}
		if err == nil {
			sb.delivered++
			break
		}
		switch {
		case errors.Is(err, errExitedBeforeNext) && sb.served > 0 && attempt == 0:
			// The process died between invocations (a panic exits after reporting, for one):
			// Lambda would start a new execution environment, so do that.
			f.discard(sb)
			continue
		case errors.Is(err, errExitedBeforeNext):
			f.discard(sb)
			f.count(func(s *FunctionStats) { s.InitFailures++ })
			fe := sb.api.InitError()
			if fe == nil {
				fe = &FunctionError{Type: "Runtime.ExitError", Message: fmt.Sprintf(
					"RequestId: %s Error: Runtime exited during init: %s", req.RequestID, exitReason(sb.waitErr))}
			}
			return &Response{RequestID: req.RequestID, Err: fe, Cold: cold}, nil
		case errors.Is(err, errInitTimeout):
			f.stop(sb)
			f.count(func(s *FunctionStats) { s.InitFailures++ })
			return &Response{RequestID: req.RequestID, Cold: cold, Err: &FunctionError{Type: "Sandbox.Timedout",
				Message: fmt.Sprintf("RequestId: %s Error: init phase timed out after %s", req.RequestID, f.cfg.InitTimeout)}}, nil
		default:
			return nil, err
		}
	}

	initDuration := time.Duration(0)
	if cold {
		initDuration = sb.api.FirstNext().Sub(sb.started)
	}
	f.mu.Lock()
	f.inflight = req.RequestID
	f.stats.Invocations++
	if cold {
		f.stats.LastInitDuration = initDuration
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight = ""
		f.mu.Unlock()
	}()

	resp, err := sb.api.await(ctx, req, sb.exited)
	switch {
	case errors.Is(err, errExited):
		<-sb.exited
		f.discard(sb)
		f.count(func(s *FunctionStats) { s.Crashes++ })
		resp.Err = &FunctionError{Type: "Runtime.ExitError", Message: fmt.Sprintf(
			"RequestId: %s Error: Runtime exited with error: %s", req.RequestID, exitReason(sb.waitErr))}
	case err != nil: // ctx ended or the API closed: the process would still be running the request
		f.stop(sb)
		return nil, err
	case resp.Err != nil && resp.Err.Type == "Sandbox.Timedout":
		f.stop(sb) // Lambda kills the execution environment at the deadline
		f.count(func(s *FunctionStats) { s.Timeouts++ })
	default:
		sb.served++
	}
	resp.Cold, resp.InitDuration = cold, initDuration
	return resp, nil
}

func (f *Function) count(fn func(*FunctionStats)) {
	f.mu.Lock()
	fn(&f.stats)
	f.mu.Unlock()
}

// sandbox returns the live sandbox, or starts one (cold).
func (f *Function) sandbox() (*sandbox, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, false, ErrClosed
	}
	if f.sb != nil {
		select {
		case <-f.sb.exited:
			f.sb.api.Close()
			f.sb = nil
		default:
			// A process that never received an invocation (its first one was cancelled during init)
			// still makes the next invocation a cold start.
			return f.sb, f.sb.delivered == 0, nil
		}
	}
	api, err := NewRuntimeAPI()
	if err != nil {
		return nil, false, err
	}
	cmd := f.cfg.command()
	cmd.Dir = filepath.Dir(f.cfg.Bootstrap)
	cmd.Env = f.environ(api.Addr())
	cmd.Stdout, cmd.Stderr = f.cfg.Stdout, f.cfg.Stderr
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	sb := &sandbox{api: api, cmd: cmd, exited: make(chan struct{})}
	sb.started = time.Now()
	if err := cmd.Start(); err != nil {
		api.Close()
		return nil, false, fmt.Errorf("lambdaemu: start bootstrap: %w", err)
	}
	go func() {
		sb.waitErr = cmd.Wait()
		close(sb.exited)
	}()
	f.sb = sb
	f.stats.ColdStarts++
	return sb, true, nil
}

// discard forgets an exited sandbox.
func (f *Function) discard(sb *sandbox) {
	f.mu.Lock()
	if f.sb == sb {
		f.sb = nil
	}
	f.mu.Unlock()
	sb.api.Close()
}

// stop kills a sandbox's process, waits for it to exit and forgets it.
func (f *Function) stop(sb *sandbox) {
	_ = killProcess(sb.cmd)
	<-sb.exited
	f.discard(sb)
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String() // "signal: killed", "exit status 3"
	}
	return err.Error()
}

// talksTLS reports whether the function's AWS clients may use TLS: some
// endpoint is https, or some service has no endpoint override (it goes to
// AWS itself).
func talksTLS(env map[string]string) bool {
	for _, svc := range []string{"DYNAMODB", "SQS", "S3"} {
		u := env["AWS_ENDPOINT_URL_"+svc]
		if u == "" {
			u = env["AWS_ENDPOINT_URL"]
		}
		if u == "" || strings.HasPrefix(strings.ToLower(u), "https://") {
			return true
		}
	}
	return false
}

// environ builds the process environment: what Lambda sets for a provided.al2023 function, then
// PassEnv from the host, then cfg.Env. AWS_LAMBDA_RUNTIME_API is always ours.
func (f *Function) environ(runtimeAPI string) []string {
	c := f.cfg
	dir := filepath.Dir(c.Bootstrap)
	env := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LANG":                            "en_US.UTF-8",
		"TZ":                              ":UTC",
		"LAMBDA_TASK_ROOT":                dir,
		"LAMBDA_RUNTIME_DIR":              dir,
		"_HANDLER":                        filepath.Base(c.Bootstrap),
		"AWS_REGION":                      c.Region,
		"AWS_DEFAULT_REGION":              c.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        c.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(c.MemorySize),
		// Not set by Lambda itself (the runtime interface emulator sets it); handlers should read the
		// deadline from their context.
		"AWS_LAMBDA_FUNCTION_TIMEOUT":    strconv.Itoa(int(c.Timeout.Round(time.Second) / time.Second)),
		"AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":      "/aws/lambda/" + c.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":     time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + newRequestID()[:8],
	}
	if c.LogFormat != "" {
		env["AWS_LAMBDA_LOG_FORMAT"] = c.LogFormat
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		for _, p := range c.PassEnv {
			if k == p || (strings.HasSuffix(p, "*") && strings.HasPrefix(k, strings.TrimSuffix(p, "*"))) {
				env[k] = v
			}
		}
	}
	for k, v := range c.Env {
		env[k] = v
	}
	if !talksTLS(env) {
		// A CA bundle serves only TLS endpoints, and loading one costs the
		// SDK's config several milliseconds of init that a real function
		// (where Lambda sets no bundle) never pays.
		delete(env, "AWS_CA_BUNDLE")
	}
	env["AWS_LAMBDA_RUNTIME_API"] = runtimeAPI
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
