package engine

import "github.com/skeinflow/skein/world"

// What the workflow's logger prints.
//
// Workflow code runs again every time the engine rebuilds a run from its
// log, and its log lines would repeat each time. A line is suppressed in two
// cases:
//
//   - The code is re-executing history: the coroutine runs while the replayer
//     consumes an event that is followed, in the log, by an event the
//     workflow code itself caused (a step, hook or wait it created, its end).
//     That code already ran in the execution which recorded the later event,
//     so its lines were printed then.
//   - The same session already passed the line: a session that rebuilds the
//     workflow (its commit was refused, or it resumes the run after a wait)
//     remembers a digest of each line its coroutines passed, by position
//     (the n-th line of the run), and stays quiet for a line whose position
//     and digest (message and attributes) match. Where the rebuilt code goes
//     another way (a payload arrived before a step's result), its lines
//     differ and are printed.
//
// So a line is printed at least once in every execution that reaches it
// past the recorded history, and at most once per session. It can print
// twice when an execution ran it but recorded nothing after it (a crash, a
// lost lease, a refused commit on another engine, or code that logs and
// then only waits on a hook or step created earlier) and a later execution
// runs it again. It is not missed: a later code-caused event is committed
// only after the code before it ran, in an execution that printed it.

// causedByCode reports whether ev can only exist because the workflow code
// reached the point that produced it.
func causedByCode(ev *world.Event) bool {
	switch ev.Data.(type) {
	case *world.StepCreated, *world.HookCreated, *world.HookConflict, *world.HookDisposed,
		*world.WaitCreated, *world.RunCompleted, *world.CompStarted:
		return true
	case *world.AttributeSet:
		return ev.CorrelationID != "" // a client's has none
	}
	return false
}

// noteAuthored raises the mark of the last code-caused event.
func (r *replayer) noteAuthored(ev *world.Event) {
	r.notePatches(ev)
	r.noteAttributes(ev)
	r.noteChild(ev)
	if causedByCode(ev) && ev.Seq > r.authored {
		r.authored = ev.Seq
	}
}

// Replaying reports whether the workflow is re-executing code whose effects
// the log already holds: the event being applied is followed by an event
// the code caused. Code that runs past the recorded history (including on a
// run's first execution, and after the last recorded creation) is live.
func (c *Context) Replaying() bool { return c.r.lastSeq < c.r.authored }

// LogLine counts one log line of the workflow code, whose digest is
// digest (of its message and attributes), and reports whether to print it
// (see the comment at the top of this file).
func (c *Context) LogLine(digest uint64) bool {
	r := c.r
	n := r.lines
	r.lines++
	if n < len(r.said) && r.said[n] == digest {
		return false // this session passed this line already
	}
	r.said = append(r.said[:n], digest) // the code goes its own way from here
	return !c.Replaying()
}

// logPanic logs the run_failed this session committed for a workflow that
// panicked, with its stack. Replays that panic again commit nothing, so the
// panic is logged once, when the run fails.
func (c *committer) logPanic(ev *world.Event) {
	d, ok := ev.Data.(*world.RunFailed)
	if !ok || d.Error == nil || d.Error.Type != TypePanic {
		return
	}
	c.e.log.Error("engine: workflow panicked", "run", c.runID, "workflow", c.st.meta.workflowName, "code", d.ErrorCode,
		"panic", d.Error.Message, "stack", d.Error.Stack)
}
