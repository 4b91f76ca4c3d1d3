package workflowcheck

import (
	"go/types"
	"strings"
)

// The messages' advice: what deterministic workflow code uses instead.
const (
	fixStep      = "do it in a step (workflow.NewStep) and pass the result to the workflow"
	fixLogger    = "log with ctx.Logger(), which stays silent while the workflow replays"
	fixGoroutine = "start steps with Step.Go (child runs with Workflow.Go) and wait with Future.Get, workflow.All or workflow.Select"
	fixChannel   = "wait on futures instead (Future.Get, workflow.All, workflow.Select)"
)

// timeRule returns why the time package's function name is not
// deterministic (it reads the machine clock or waits in real time), with
// its replacement, or "".
func timeRule(name string) string {
	switch name {
	case "Now":
		return "time.Now reads the machine clock: use ctx.Now(), the workflow's time"
	case "Since":
		return "time.Since reads the machine clock: use ctx.Now().Sub(t)"
	case "Until":
		return "time.Until reads the machine clock: use t.Sub(ctx.Now())"
	case "Sleep":
		return "time.Sleep waits in real time and is lost on replay: use workflow.Sleep(ctx, d), a durable timer"
	case "After", "NewTimer":
		return "time." + name + " is a real-time timer: use workflow.NewTimer(ctx, d) and wait with Get or workflow.Select"
	case "AfterFunc":
		return "time.AfterFunc runs its function on another goroutine in real time: use workflow.NewTimer(ctx, d), then call the function"
	case "Tick", "NewTicker":
		return "time." + name + " is a real-time ticker: loop over workflow.Sleep(ctx, d)"
	case "LoadLocation":
		return "time.LoadLocation reads the machine's time zone database, which can differ on replay: " +
			"load it in a step, or use time.FixedZone"
	}
	return ""
}

// randomID reports whether the function name of package path makes a
// random identifier: the common UUID and ULID packages'.
func randomID(path, name string) bool {
	switch path {
	case "github.com/google/uuid", "github.com/gofrs/uuid", "github.com/gofrs/uuid/v5", "github.com/satori/go.uuid":
		switch name {
		case "New", "NewString", "NewRandom", "NewV1", "NewV4", "NewV6", "NewV7", "Must":
			return true
		}
	case "github.com/oklog/ulid", "github.com/oklog/ulid/v2":
		return name == "Make" || name == "MustNew" || name == "New"
	}
	return false
}

// logging reports whether the function name of package path writes to the
// process's standard streams or its default logger.
func logging(path, name string) bool {
	switch path {
	case "fmt":
		return name == "Print" || name == "Printf" || name == "Println"
	case "log":
		return strings.HasPrefix(name, "Print") || strings.HasPrefix(name, "Fatal") ||
			strings.HasPrefix(name, "Panic") || name == "Output"
	case "log/slog":
		switch strings.TrimSuffix(name, "Context") {
		case "Debug", "Info", "Warn", "Error", "Log", "LogAttrs":
			return true
		}
	}
	return false
}

// pureIO reports whether the function or method (named "Type.Method") of
// an I/O package does no I/O, so that workflow code may call it.
func pureIO(path, name string) bool {
	switch path {
	case "os":
		switch name {
		case "IsExist", "IsNotExist", "IsPermission", "IsTimeout", "IsPathSeparator":
			return true
		}
	case "net/http":
		switch name {
		case "StatusText", "CanonicalHeaderKey", "DetectContentType", "ParseHTTPVersion", "ParseTime",
			"Header.Add", "Header.Set", "Header.Get", "Header.Values", "Header.Del", "Header.Clone",
			"Cookie.String", "Cookie.Valid":
			return true
		}
	}
	return false
}

// ioPackage reports whether path is a package whose functions do I/O (the
// file system, the network, processes, the environment). The pure
// subpackages of net (url, netip, mail, textproto) are not.
func ioPackage(path string) bool {
	switch path {
	case "os", "io", "io/ioutil", "io/fs", "net", "syscall", "crypto/rand":
		return true
	case "net/url", "net/netip", "net/mail", "net/textproto":
		return false
	}
	for _, p := range []string{"os/", "net/", "syscall/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// callRule returns why a call of fn is not deterministic, with what to use
// instead, or "" when it is fine in workflow code.
func callRule(fn *types.Func) string {
	pkg := fn.Pkg()
	if pkg == nil {
		return ""
	}
	path, name := pkg.Path(), fn.Name()
	recv := fn.Type().(*types.Signature).Recv()
	switch {
	case path == "time" && recv == nil:
		return timeRule(name)
	case path == "math/rand" || path == "math/rand/v2":
		if recv != nil || strings.HasPrefix(name, "New") {
			return "" // a source the code seeds itself, or a draw from one
		}
		return displayName(fn) + " draws from the process's random source: use ctx.Rand(), seeded by the run"
	case path == "crypto/rand":
		return displayName(fn) + " draws fresh randomness on every replay: " + fixStep +
			" (ctx.Rand() is deterministic and not secret)"
	case recv == nil && randomID(path, name):
		return displayName(fn) + " draws a new random ID on every replay: use ctx.NewID(), derived from the run"
	case recv == nil && logging(path, name):
		return displayName(fn) + " writes again on every replay: " + fixLogger
	case ioPackage(path):
		if pureIO(path, qualifiedMethod(fn)) {
			return ""
		}
		return displayName(fn) + " does I/O, whose result can differ on replay: " + fixStep
	}
	return ""
}

// goroutineStarter reports whether fn runs a function argument on a new
// goroutine: sync.WaitGroup.Go, errgroup.Group.Go and TryGo,
// time.AfterFunc.
func goroutineStarter(fn *types.Func) bool {
	if fn.Pkg() == nil {
		return false
	}
	switch qualifiedMethod(fn) {
	case "WaitGroup.Go":
		return fn.Pkg().Path() == "sync"
	case "Group.Go", "Group.TryGo":
		return fn.Pkg().Path() == "golang.org/x/sync/errgroup"
	case "AfterFunc":
		return fn.Pkg().Path() == "time"
	}
	return false
}

// qualifiedMethod names fn as "Type.Method" for a method, else by its name.
func qualifiedMethod(fn *types.Func) string {
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return fn.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name() + "." + fn.Name()
	}
	return fn.Name()
}

// displayName names fn as its users write it: "os.Getenv",
// "http.Client.Do".
func displayName(fn *types.Func) string {
	if fn.Pkg() == nil {
		return fn.Name()
	}
	return fn.Pkg().Name() + "." + qualifiedMethod(fn)
}
