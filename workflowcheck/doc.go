// Package workflowcheck is a go/analysis analyzer that finds
// non-deterministic code in Skein workflow functions, before a replay does.
//
// A workflow is replayed from its run's event log every time it resumes, so
// it has to ask for the same steps, timers and hooks in the same order each
// time. The engine catches a replay that does not (the run is held with
// REPLAY_DIVERGENCE), but only when it happens; the analyzer reports the
// code that makes it happen, at build time.
//
// # Running it
//
// The skeinvet command (github.com/skeinflow/skein/cmd/skeinvet) runs the
// analyzer on its own or as go vet's tool:
//
//	go install github.com/skeinflow/skein/cmd/skeinvet
//	skeinvet ./...
//	go vet -vettool=$(which skeinvet) ./...
//
// Either way it exits non-zero when it reports something, so a CI step or
// a Makefile target fails on a finding. Programs can run Analyzer with any
// go/analysis driver (see the package example).
//
// # What is workflow code
//
// A function declaration, method or function literal with a parameter of
// type workflow.Context is workflow code: the functions passed to
// workflow.New, and the helpers they pass their context to. A function
// literal inside workflow code is workflow code too (a sort comparator, a
// deferred function), unless its first parameter is a context.Context: that
// is a step body (workflow.NewStep), which runs once per attempt and may do
// anything. A function that workflow code calls without a context (a
// helper) is checked as workflow code when it belongs to the same package,
// or is exported by another package of the same module; a finding in it is
// reported where workflow code calls it, naming the line in the helper.
// Functions of other modules (the standard library, dependencies) are not
// followed: the rules below name what matters there.
//
// # What it reports
//
//   - the clock and real-time waits: time.Now, Since, Until (use ctx.Now()),
//     time.Sleep (workflow.Sleep), time.After, NewTimer, AfterFunc, Tick,
//     NewTicker (workflow.NewTimer, workflow.Sleep);
//   - the process's random sources: math/rand and math/rand/v2's top-level
//     functions (use ctx.Rand(), seeded by the run; a generator the code
//     creates and seeds itself is fine), and crypto/rand (draw secrets in a
//     step);
//   - ranging over a map, or over maps.Keys, maps.Values or maps.All: the
//     order changes from one replay to the next (range over
//     slices.Sorted(maps.Keys(m)));
//   - go statements, sync.WaitGroup.Go and errgroup.Group.Go, channel sends
//     and receives, ranging over a channel, and select (start steps with
//     Step.Go and wait on the futures with Get, workflow.All or
//     workflow.Select); and, in a function that runs on another goroutine,
//     each workflow call (one that passes a workflow.Context or calls its
//     methods), which fails the run with WORKFLOW_API_MISUSE;
//   - I/O: calls into os, io, io/fs, net, net/http, syscall and their
//     subpackages (do it in a step), except functions that do no I/O
//     (os.IsNotExist, http.StatusText, http.Header's methods; net/url,
//     net/netip, net/mail and net/textproto are not I/O packages);
//   - printing and the default loggers: fmt.Print*, log's and log/slog's
//     top-level functions (use ctx.Logger(), silent while replaying);
//   - package-level variables: every write (an assignment, ++, taking the
//     address), and every read except of a variable that is a definition
//     rather than state: one whose type is from the workflow package (the
//     steps and workflows declared with workflow.NewStep and workflow.New,
//     options), one that is an error (sentinels such as io.EOF), or one of
//     another module, a library, unless it is a standard package that does
//     I/O (time.UTC and base64.StdEncoding are fine, os.Args and
//     http.DefaultClient are not). A variable of another package of the
//     same module is the user's state and is reported like the package's
//     own. Constants and functions are not variables.
//
// # Suppressing a finding
//
// A comment starting with //skein:nondeterministic-ok, followed by a reason,
// suppresses the findings on its own line and on the line below it:
//
//	//skein:nondeterministic-ok only logged, never decides what to call
//	ctx.Logger().Info("took", "wall", time.Since(start))
//
// A directive without a reason is itself reported, and suppresses nothing.
// In a helper, it suppresses the finding for every caller.
//
// The analyzer skips the workflow package itself, which implements the
// deterministic API. It cannot see through function values, interfaces or
// reflection: a clean report is not a proof of determinism, and replay
// still checks every run.
package workflowcheck
