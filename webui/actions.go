package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// maxForm bounds an action's form (a hook payload is the largest field).
const maxForm = 1 << 20

// actionFunc carries out an action on run and returns where to go next
// (a run ID) and the notice to show there, or an error to show.
type actionFunc func(ctx context.Context, r *http.Request, run *world.Run) (next, notice string, err error)

// actionError is an action refused for a reason the user can fix; its
// message is shown as it is, with code.
type actionError struct {
	code int
	msg  string
}

func (e *actionError) Error() string { return e.msg }

func refuse(format string, args ...any) error {
	return &actionError{code: http.StatusConflict, msg: fmt.Sprintf(format, args...)}
}

// action wraps an action with the checks every POST goes through: read-only,
// CSRF, the run's existence. It answers 303 to the run's page.
func (s *server) action(f actionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.checkAction(w, r) {
			return
		}
		run, ok := s.loadRun(w, r)
		if !ok {
			return
		}
		next, notice, err := f(r.Context(), r, run)
		if err != nil {
			var ae *actionError
			if errors.As(err, &ae) {
				s.failPage(w, r, ae.code, ae.msg)
				return
			}
			s.log.Error("webui: action", "path", r.URL.Path, "run", run.RunID, "err", err)
			s.failPage(w, r, http.StatusInternalServerError, "The action failed: "+err.Error())
			return
		}
		http.Redirect(w, r, "/runs/"+url.PathEscape(next)+"?done="+notice, http.StatusSeeOther)
	}
}

// checkAction runs the checks every POST goes through (read-only, the
// form's size, CSRF), answering the refusal itself; it reports whether the
// action may go on.
func (s *server) checkAction(w http.ResponseWriter, r *http.Request) bool {
	if s.readOnly() {
		s.failPage(w, r, http.StatusForbidden, "Actions are off: "+s.cfg.ReadOnlyReason+".")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.failPage(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return false
	}
	if why := checkCSRF(r); why != "" {
		s.failPage(w, r, http.StatusForbidden, "Refused: "+why+".")
		return false
	}
	return true
}

func (s *server) cancel(ctx context.Context, r *http.Request, run *world.Run) (string, string, error) {
	if run.Status.Terminal() {
		return "", "", refuse("Run %s is %s already: there is nothing to cancel.", run.RunID, run.Status)
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "cancelled from the dashboard"
	}
	var opts []client.CancelOption
	if r.PostFormValue("compensate") != "" {
		opts = append(opts, client.CancelCompensating())
	}
	return run.RunID, "cancel", s.cfg.Client.Cancel(ctx, run.RunID, reason, opts...)
}

func (s *server) rerun(ctx context.Context, _ *http.Request, run *world.Run) (string, string, error) {
	if !run.Status.Terminal() {
		return "", "", refuse("Run %s is %s, not finished: wait for it, or cancel it first.", run.RunID, run.Status)
	}
	if err := refuseSealed(run, "rerun it", "its encrypted input would be copied into a new run that could never read it"); err != nil {
		return "", "", err
	}
	var input any
	if len(run.Input) > 0 {
		input = run.Input
	}
	// The new run records the old one's code version, so that the
	// deployment pinned to that version runs it (as skein runs rerun does).
	// It is not a schedule's firing: the SDK's own attributes stay behind.
	attrs := maps.Clone(run.Attributes)
	maps.DeleteFunc(attrs, func(k, _ string) bool { return strings.HasPrefix(k, sdk.ReservedPrefix) })
	id, err := s.cfg.Client.Start(ctx, run.WorkflowName, input, client.WithAttributes(attrs),
		client.WithVersion(run.Version), client.StartUnregistered())
	return id, "rerun", err
}

func (s *server) retry(ctx context.Context, _ *http.Request, run *world.Run) (string, string, error) {
	if run.Status != world.RunStatusHeld {
		return "", "", refuse("Run %s is %s, not held: only a held run can be retried.", run.RunID, run.Status)
	}
	return run.RunID, "retry", s.cfg.Client.RetryRun(ctx, run.RunID)
}

func (s *server) fail(ctx context.Context, r *http.Request, run *world.Run) (string, string, error) {
	if run.Status != world.RunStatusHeld {
		return "", "", refuse("Run %s is %s, not held: only a held run can be failed from here.", run.RunID, run.Status)
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "failed from the dashboard"
	}
	// Unticked, the client's own default applies (it compensates a
	// workflow its Registry defines WithCompensateOnFailure).
	var opts []client.FailOption
	if r.PostFormValue("compensate") != "" {
		opts = append(opts, client.FailCompensating())
	}
	return run.RunID, "fail", s.cfg.Client.FailRun(ctx, run.RunID, reason, opts...)
}

// resume sends the form's JSON payload to the run's hook named by its ID
// (the form never carries a token: a webhook's token is a secret).
func (s *server) resume(ctx context.Context, r *http.Request, run *world.Run) (string, string, error) {
	hook, err := s.world.GetHook(ctx, &world.GetHookParams{HookID: r.PostFormValue("hook")})
	if errors.Is(err, world.ErrNotFound) || (err == nil && hook.RunID != run.RunID) {
		return "", "", refuse("Run %s has no active hook %q: it was resumed and disposed, or the run ended.", run.RunID, r.PostFormValue("hook"))
	}
	if err != nil {
		return "", "", err
	}
	if hook.IsWebhook || sdk.IsInternalToken(hook.Token) {
		return "", "", &actionError{code: http.StatusBadRequest, msg: "This hook cannot be resumed from here: a webhook takes requests to its URL, and a child run's hook only the child's end resumes."}
	}
	if err := refuseSealed(run, "resume its hook", "the payload would be stored in clear in an encrypted run"); err != nil {
		return "", "", err
	}
	text := strings.TrimSpace(r.PostFormValue("payload"))
	if text == "" {
		text = "null"
	}
	if !json.Valid([]byte(text)) {
		return "", "", &actionError{code: http.StatusBadRequest, msg: "The payload is not JSON: " + clipText(text, 200)}
	}
	if _, err := s.cfg.Client.ResumeHook(ctx, hook.Token, json.RawMessage(text)); err != nil {
		var nf *client.RequestError
		if errors.As(err, &nf) && nf.Kind == world.ErrNotFound {
			return "", "", refuse("The hook is gone: it was resumed and disposed, or the run ended.")
		}
		return "", "", err
	}
	return run.RunID, "resume", nil
}

// refuseSealed refuses an action that writes into (or copies from) a run
// whose payloads are still sealed as the dashboard read it: its World has
// no key that opens them (skein ui -keys, -kms-key), so what it wrote
// would be wrong or in clear. Nothing is written.
func refuseSealed(run *world.Run, doing, why string) error {
	kid, sealed := sealmark.Sealed(run.Input, run.ExecutionContext)
	if !sealed {
		return nil
	}
	return &actionError{code: http.StatusConflict, msg: fmt.Sprintf(
		"Cannot %s from here: run %s's payloads are encrypted with key %q, which this dashboard cannot open (%s). "+
			"Start skein ui with the key (-keys for a local store, -kms-key for a stack), or use skein runs rerun / skein hooks resume with it.",
		doing, run.RunID, kid, why)}
}

// clipText shortens s to n runes.
func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
