package webui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// DeadLetter is one message of a deployed stack's dead-letter queue, as
// the dead-letter page shows it.
type DeadLetter struct {
	MessageID string
	// RunID, Workflow and Status are the run the message belongs to, when
	// it is a run's (a schedule's firing names its workflow only).
	RunID, Workflow, Status string
	// Redrive says what moving it back to the work queue does ("resumes
	// the run", "nothing to resume (the run is at rest)", "stays: not a
	// Skein message").
	Redrive string
	// Moves: a redrive moves it back (a Skein message); Moved: this call
	// moved it.
	Moves, Moved bool
}

// DeadLetterQueue is a deployed stack's dead-letter queue, for the
// dashboard's dead-letter page (/dlq). skein ui serves one on a stack,
// with the code of skein dlq redrive.
type DeadLetterQueue interface {
	// DeadLetters reads the dead letters and says what moving each back
	// does; with redrive, it also moves those that move back to the work
	// queue. On an error it returns what it read and did so far.
	DeadLetters(ctx context.Context, redrive bool) ([]DeadLetter, error)
}

// dlqData is the dead-letter page's.
type dlqData struct {
	Letters []DeadLetter
	Moves   int // letters a redrive would move
	Err     string
}

// dlq lists the dead letters, with what a redrive would resume.
func (s *server) dlq(w http.ResponseWriter, r *http.Request) {
	if s.cfg.DeadLetters == nil {
		s.fail404(w, r, "This dashboard has no dead-letter queue: a deployed stack's has one (skein -stack <name> ui).")
		return
	}
	letters, err := s.cfg.DeadLetters.DeadLetters(r.Context(), false)
	d := dlqData{Letters: letters}
	if err != nil {
		s.log.Error("webui: read the dead-letter queue", "err", err)
		d.Err = err.Error()
	}
	for _, l := range letters {
		if l.Moves {
			d.Moves++
		}
	}
	s.render(w, r, http.StatusOK, "dlq", "Dead letters", d)
}

// redrive moves the dead letters back to the work queue, through the
// checks every action has (read-only, CSRF), and answers 303 to the
// dead-letter page, which says how many moved.
func (s *server) redrive(w http.ResponseWriter, r *http.Request) {
	if !s.checkAction(w, r) {
		return
	}
	if s.cfg.DeadLetters == nil {
		s.fail404(w, r, "This dashboard has no dead-letter queue.")
		return
	}
	letters, err := s.cfg.DeadLetters.DeadLetters(r.Context(), true)
	moved, kept := 0, 0
	for _, l := range letters {
		if l.Moved {
			moved++
		} else {
			kept++
		}
	}
	if err != nil {
		s.log.Error("webui: redrive", "moved", moved, "err", err)
		s.failPage(w, r, http.StatusInternalServerError, fmt.Sprintf("The redrive failed after moving %d dead letters: %v", moved, err))
		return
	}
	http.Redirect(w, r, "/dlq?done=redrive&moved="+strconv.Itoa(moved)+"&kept="+strconv.Itoa(kept), http.StatusSeeOther)
}

// redriveNotice says what a redrive did, from the page's query.
func redriveNotice(r *http.Request) string {
	moved, err1 := strconv.Atoi(r.URL.Query().Get("moved"))
	kept, err2 := strconv.Atoi(r.URL.Query().Get("kept"))
	if err1 != nil || err2 != nil || moved < 0 || kept < 0 {
		return "Redrive done."
	}
	return fmt.Sprintf("Moved %d dead letters back to the work queue; %d left in the dead-letter queue.", moved, kept)
}
