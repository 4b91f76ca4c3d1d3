package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/world"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the CLI: it returns the exit code (0 ok, 1 failed, 2 bad usage).
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWith(ctx, &env{stdin: os.Stdin, stdout: stdout, stderr: stderr}, args)
}

// env is what a command works with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	db             string
	repair         bool   // -repair-torn-tail: localworld.Config.RepairTornTail
	keys           string // -keys: the local store's payload keys (encrypt.ParseLocalKeys)
	lockTimeout    time.Duration
	// vars is the environment, read once by runWith (envvars.Read).
	vars envvars.Vars

	remote remote // a deployed stack (remote.go), instead of db
	// stacks makes the CloudFormation client (tests give a fake).
	stacks func(aws.Config) stackDescriber

	w      world.World
	client *client.Client
	// sqs is the deployed stack's SQS client (openRemote), for skein dlq.
	sqs dlqQueue
	// writes: the command changes the store, so open takes its lock.
	writes  bool
	cmdName string // the command's name, for messages
	// readOnly: open opened the local store read-only, without its lock.
	readOnly bool
	// actions: the command (skein ui) changes the store now and then, and
	// open makes act, which takes the lock for each change.
	actions bool
	act     *actWorld
	// waitStore: the command follows the store (skein ui, runs watch), so
	// open waits for a local store that does not exist yet to appear.
	waitStore bool
}

// command is one "skein <group> <name>" command.
type command struct {
	group, name string
	usage       string // the arguments, after the command's name
	summary     string
	help        string // what it does, with examples
	// nargs is the number of positional arguments (-1 takes any number),
	// optArgs how many more it may take.
	nargs, optArgs int
	// writes: the command changes the store, and takes the local store's
	// lock to do it (the others read it without the lock).
	writes bool
	// setup defines the command's flags and returns what runs it.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command with its positional arguments, its flags parsed.
type runFunc func(ctx context.Context, e *env, args []string) error

func (c *command) fullName() string { return c.group + " " + c.name }

var commands = []*command{
	runsListCmd, runsShowCmd, runsEventsCmd, runsWatchCmd, runsExportCmd, runsCancelCmd, runsRerunCmd, runsRetryCmd, runsFailCmd,
	hooksListCmd, hooksResumeCmd,
	streamsListCmd, streamsReadCmd,
	patchesCheckCmd,
	storeMigrateCmd,
	dlqRedriveCmd,
}

// usageError is bad usage: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

const defaultDB = "skein-quickstart.db"

// defaultStore is the local store -db defaults to: $SKEIN_DB, else
// defaultDB.
func defaultStore(v envvars.Vars) string {
	if v.DB != "" {
		return v.DB
	}
	return defaultDB
}

func runWith(ctx context.Context, e *env, args []string) int {
	if e.lockTimeout == 0 {
		// Only commands that change the local store take its lock: long
		// enough to outwait another such command, short enough to say soon
		// that a worker holds it.
		e.lockTimeout = time.Second
	}
	global := flag.NewFlagSet("skein", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	e.vars = envvars.Read(os.Getenv)
	global.StringVar(&e.db, "db", defaultStore(e.vars), "")
	global.BoolVar(&e.repair, "repair-torn-tail", false, "")
	global.StringVar(&e.keys, "keys", e.vars.EncryptionKeys, "")
	e.remote = remoteFromEnv(e.vars)
	e.remote.flags(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			mainUsage(e.stdout)
			return 0
		}
		fmt.Fprintf(e.stderr, "skein: %s\n\n", safeLines(err.Error()))
		mainUsage(e.stderr)
		return 2
	}
	args = global.Args()
	if len(args) == 0 {
		mainUsage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help":
		return help(e, args[1:])
	case "init":
		return initCmd(ctx, e, args[1:])
	case "ui":
		return uiCmd(ctx, e, args[1:])
	case "version":
		return versionCmd(e, args[1:])
	}
	group := args[0]
	if !slices.ContainsFunc(commands, func(c *command) bool { return c.group == group }) {
		fmt.Fprintf(e.stderr, "skein: unknown command %q\n\n", group)
		mainUsage(e.stderr)
		return 2
	}
	if len(args) < 2 || args[1] == "-h" || args[1] == "-help" || args[1] == "--help" {
		w, code := e.stderr, 2
		if len(args) >= 2 {
			w, code = e.stdout, 0
		} else {
			fmt.Fprintf(e.stderr, "skein %s: a command is required\n\n", group)
		}
		groupUsage(w, group)
		return code
	}
	i := slices.IndexFunc(commands, func(c *command) bool { return c.group == group && c.name == args[1] })
	if i < 0 {
		fmt.Fprintf(e.stderr, "skein: unknown command %q\n\n", group+" "+args[1])
		groupUsage(e.stderr, group)
		return 2
	}
	return e.exec(ctx, commands[i], args[2:])
}

// exec parses a command's flags and arguments (flags may follow arguments)
// and runs it.
func (e *env) exec(ctx context.Context, c *command, args []string) int {
	fs := flag.NewFlagSet("skein "+c.fullName(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.storeFlags(fs)
	runCmd := c.setup(fs)
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		commandUsage(e.stdout, c, fs)
		return 0
	case err != nil:
		fmt.Fprintf(e.stderr, "skein %s: %s\n\n", c.fullName(), safeLines(err.Error()))
		commandUsage(e.stderr, c, fs)
		return 2
	case c.nargs >= 0 && (len(pos) < c.nargs || len(pos) > c.nargs+c.optArgs):
		want := fmt.Sprint(c.nargs)
		if c.optArgs > 0 {
			want = fmt.Sprintf("%d to %d", c.nargs, c.nargs+c.optArgs)
		}
		fmt.Fprintf(e.stderr, "skein %s: want %s argument(s) (%s), got %d\n\n", c.fullName(), want, c.usage, len(pos))
		commandUsage(e.stderr, c, fs)
		return 2
	}
	e.writes, e.cmdName = c.writes, c.fullName()
	err = runCmd(ctx, e, pos)
	if e.w != nil {
		if cerr := e.w.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "skein %s: %s\n", c.fullName(), safeLines(err.Error()))
		return 2
	}
	fmt.Fprintf(e.stderr, "skein %s: %s\n", c.fullName(), safeLines(err.Error()))
	return 1
}

// storeFlags defines the flags every command takes (as the main command
// does): -db and -repair-torn-tail, defaulting to what the main command's
// flags said.
func (e *env) storeFlags(fs *flag.FlagSet) {
	fs.StringVar(&e.db, "db", e.db, "the local store `file`")
	fs.BoolVar(&e.repair, "repair-torn-tail", e.repair,
		"drop an incomplete last record of the store (what a crash in the middle of a write leaves; that commit was never acknowledged)")
	fs.StringVar(&e.keys, "keys", e.keys, "the `keys` that seal the local store's payloads, id=base64-key[,...] as the program that wrote them has them ($SKEIN_ENCRYPTION_KEYS): payloads are shown decrypted, and a run skein starts (runs rerun) is sealed with the first")
	e.remote.flags(fs)
}

// parseInterspersed parses flags anywhere among the positional arguments
// ("--" ends the flags) and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func mainUsage(w io.Writer) {
	fmt.Fprintf(w, `skein looks into a Skein store, local or deployed: runs, their steps and events,
hooks, streams. skein init writes a new project of your own.

Usage:
  skein [-db file] [-repair-torn-tail] <command> [arguments] [flags]
  skein -stack name [-region r] <command> [arguments] [flags]
  skein -table t -queue-url u -bucket b [-region r] [-endpoint url] <command> ...

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-15s %s\n", c.fullName(), c.summary)
	}
	fmt.Fprintf(w, "  %-15s %s\n", "ui", uiSummary)
	fmt.Fprintf(w, "  %-15s %s\n", "init", "write a new project: workflows, Lambda main, SAM template, Makefile")
	fmt.Fprintf(w, "  %-15s %s\n", "version", "print the Skein module version (or VCS revision) this binary was built from")
	fmt.Fprintf(w, `
Flags:
  -db file            the local store (default $SKEIN_DB, else %s)
  -repair-torn-tail   drop an incomplete last record of the store: what a crash in
                      the middle of a write (kill -9, power loss) leaves; that commit
                      was never acknowledged, and everything before it is kept
  -stack name         a deployed stack: read its table, queue and bucket from the
                      outputs of the CloudFormation stack sam deploy created
                      (default $SKEIN_STACK)
  -sam-env env        the stack (and region) samconfig.toml names for sam deploy's
                      config environment env (default, prod, …); -samconfig file
  -table, -queue-url, -bucket
                      a deployed stack's resources ($SKEIN_TABLE, $SKEIN_QUEUE_URL,
                      $SKEIN_BUCKET); with -stack, they override its outputs
  -region r           the AWS region (default $AWS_REGION, the AWS profile's)
  -endpoint url       send AWS requests to an emulator ($SKEIN_ENDPOINT)
  -keys id=key,...    the keys sealing a local store's payloads ($SKEIN_ENCRYPTION_KEYS)
  -kms-key key        the KMS key sealing a stack's payloads ($SKEIN_KMS_KEY_ID;
                      default: the stack's PayloadKeyArn output)
Encrypted payloads are shown decrypted when the key is given (and your
credentials may use it), else as a note naming the key they need. With a
key given, what skein writes is sealed too: a run it starts (runs rerun)
is a sealed run, which only workers holding the key will run (a worker
without it leaves the run waiting).
Any command takes these flags too.

Commands that only read a local store (runs list, show, events, watch,
export; hooks list; streams; patches; ui's pages) never lock it: they read it
as the quickstart or your worker writes it, and a worker can start while they
run. Commands that change it (runs cancel, rerun, retry, fail; hooks resume;
an action in skein ui; -repair-torn-tail) take its lock for as long as they
take; while another process holds the store they wait up to a second, then
exit 1 naming that process: only the process holding a store may change it.

Examples:
  skein runs list -status running
  skein runs show wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein -db orders.db hooks list
  skein -stack orders runs list -status failed

Run "skein help <command>" or "skein <command> -help" for a command's flags and examples.
`, defaultDB)
}

func groupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: skein %s <command> [arguments] [flags]\n\nCommands:\n", group)
	for _, c := range commands {
		if c.group == group {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun \"skein %s <command> -help\" for a command's flags and examples.\n", group)
}

func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: skein %s %s\n\n%s\n", c.fullName(), c.usage, strings.TrimSpace(c.help))
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// help prints the help of the main command, a group or a command.
func help(e *env, args []string) int {
	switch len(args) {
	case 0:
		mainUsage(e.stdout)
		return 0
	case 1:
		switch args[0] {
		case "init":
			return initCmd(context.Background(), e, []string{"-help"})
		case "ui":
			return uiCmd(context.Background(), e, []string{"-help"})
		}
		if slices.ContainsFunc(commands, func(c *command) bool { return c.group == args[0] }) {
			groupUsage(e.stdout, args[0])
			return 0
		}
	case 2:
		for _, c := range commands {
			if c.group == args[0] && c.name == args[1] {
				fs := flag.NewFlagSet(c.fullName(), flag.ContinueOnError)
				e.storeFlags(fs)
				c.setup(fs)
				commandUsage(e.stdout, c, fs)
				return 0
			}
		}
	}
	fmt.Fprintf(e.stderr, "skein help: unknown command %q\n\n", strings.Join(args, " "))
	mainUsage(e.stderr)
	return 2
}

// colorOn reports whether to write ANSI colours: stdout is a terminal, and
// neither -no-color nor $NO_COLOR says otherwise.
func (e *env) colorOn(w io.Writer, noColor bool) bool {
	if noColor || e.vars.NoColor != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
