package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/world"
)

var hooksListCmd = &command{
	group: "hooks", name: "list", usage: "[-run runId] [-json] [-show-tokens]",
	summary: "list active hooks (what runs wait for)",
	help: `
Lists the active hooks, oldest first: the token a sender resumes a hook with,
the run it belongs to, whether it is a webhook, when it was created and its
metadata. A hook stops being active when its workflow disposes of it or its
run ends. With -json, prints one JSON object per hook.

A webhook's token is the only credential its URL needs, so it is shown
redacted (sha256:<first 12 hex digits>, as the worker logs show it), in
tables and in -json, unless -show-tokens is given. A plain hook's token is
shown: it is what "skein hooks resume" takes.

Examples:
  skein hooks list
  skein hooks list -run wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein hooks list -show-tokens -json`,
	setup: func(fs *flag.FlagSet) runFunc {
		runID := fs.String("run", "", "only the hooks of the run `runId`")
		asJSON := fs.Bool("json", false, "print JSON lines")
		reveal := fs.Bool("show-tokens", false, "show webhook tokens in full (they are the webhooks' credentials)")
		return func(ctx context.Context, e *env, _ []string) error {
			if *runID != "" {
				if _, err := e.getRun(ctx, *runID); err != nil {
					return err
				}
			} else if err := e.open(ctx); err != nil {
				return err
			}
			var hooks []world.Hook
			for cursor := ""; ; {
				page, err := e.w.ListHooks(ctx, &world.ListHooksParams{RunID: *runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
				if err != nil {
					return err
				}
				hooks = append(hooks, page.Items...)
				if !page.HasMore {
					break
				}
				cursor = page.Cursor
			}
			if *asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, h := range hooks {
					if h.IsWebhook && !*reveal {
						h.Token = redact.Token(h.Token)
					}
					if err := enc.Encode(h); err != nil {
						return err
					}
				}
				return nil
			}
			if len(hooks) == 0 {
				fmt.Fprintln(e.stdout, "no active hooks")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOKEN\tRUN\tKIND\tCREATED\tMETADATA")
			for _, h := range hooks {
				kind := "hook"
				if h.IsWebhook {
					kind = "webhook"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", shownToken(h.Token, h.IsWebhook, *reveal), h.RunID, kind,
					h.CreatedAt.Local().Format(timeLayout), clip(safeText(string(h.Metadata)), 60))
			}
			return tw.Flush()
		}
	},
}

var hooksResumeCmd = &command{
	group: "hooks", name: "resume", usage: "<token> <json-payload|@file|->", nargs: 2,
	writes:  true,
	summary: "send a payload to a hook, resuming its run",
	help: `
Sends a JSON payload to the active hook holding the token: the payload is
recorded in the run's log and the run is woken. The payload is given inline,
read from a file (@file) or from standard input (-). The run goes on when a
worker next runs on the store (for the quickstart's runs: start the quickstart
again with the same -order). The workflow decodes the payload as its hook's
type: one that does not decode is still recorded, and the workflow receives it
as an error (unhandled, the run fails with HOOK_PAYLOAD_INVALID).

Examples:
  skein hooks resume approve/1001 '{"approved":true,"by":"ops@example.com"}'
  skein hooks resume approve/1001 @approval.json
  echo '{"approved":false,"by":"ops","note":"out of stock"}' | skein hooks resume approve/1001 -`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			token := args[0]
			payload, err := readPayload(e.stdin, args[1])
			if err != nil {
				return err
			}
			if err := e.open(ctx); err != nil {
				return err
			}
			runID := ""
			if hk, err := e.client.GetHookByToken(ctx, token); err == nil {
				runID = hk.RunID
				if r, err := e.getRun(ctx, hk.RunID); err == nil {
					if err := e.stillSealed(r, "resume its hook (the payload would be stored in clear)"); err != nil {
						return err
					}
				}
			}
			h, err := e.client.ResumeHook(ctx, token, payload)
			var nf *client.RequestError
			if errors.As(err, &nf) && nf.Kind == world.ErrNotFound {
				return fmt.Errorf("no active hook holds the token %q: it is unknown, disposed, or its run has finished (see skein hooks list)", token)
			}
			if err != nil {
				return damagedHook(token, runID, err)
			}
			fmt.Fprintf(e.stdout, "resumed hook %q of run %s; the run goes on when a worker next runs on %s\n", token, h.RunID, e.where())
			return nil
		}
	},
}

// readPayload reads a JSON payload given inline, as @file or as - (stdin).
func readPayload(stdin io.Reader, arg string) (json.RawMessage, error) {
	var b []byte
	var err error
	from := "the payload"
	switch {
	case arg == "-":
		from = "standard input"
		b, err = io.ReadAll(stdin)
	case strings.HasPrefix(arg, "@"):
		from = arg[1:]
		b, err = os.ReadFile(arg[1:])
	default:
		b = []byte(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	b = []byte(strings.TrimSpace(string(b)))
	if !json.Valid(b) {
		return nil, usagef("%s is not valid JSON (quote strings: '\"yes\"'; objects: '{\"approved\":true}')", from)
	}
	return b, nil
}
