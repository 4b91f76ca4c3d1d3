package webui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// timeInput is the layout of an <input type="datetime-local">.
const timeInput = "2006-01-02T15:04"

// statuses are the run statuses the list's filter offers.
func statuses() []world.RunStatus {
	return []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld,
		world.RunStatusCompleted, world.RunStatusFailed, world.RunStatusCancelled}
}

// listQuery is the runs list's filter and position, read from the URL.
type listQuery struct {
	Workflow string
	Status   world.RunStatus
	From, To time.Time // creation time bounds; zero: none
	FromText string
	ToText   string
	// Version keeps the runs started by code of this version ("-": the
	// runs that recorded none).
	Version string
	Cursor  string
	// Attr is the attribute filter as typed (key=value); Attribute is
	// what the World filters on.
	Attr      string
	Attribute *world.AttributeFilter
}

// listCursor is the list's own cursor: the World's cursor and how many
// runs of the page it names were shown already, so that a page cut short by
// the time filter resumes at the next run.
type listCursor struct {
	World string `json:"w,omitempty"`
	Skip  int    `json:"s,omitempty"`
}

func (c listCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (listCursor, error) {
	var c listCursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Skip < 0 {
		return c, errors.New("the page cursor is not one this dashboard wrote: start again from the first page")
	}
	return c, nil
}

// parseListQuery reads the filter from the URL; loc is the zone of the
// time inputs.
func parseListQuery(v url.Values, loc *time.Location) (listQuery, error) {
	q := listQuery{Workflow: strings.TrimSpace(v.Get("workflow")), Cursor: v.Get("cursor"),
		FromText: v.Get("from"), ToText: v.Get("to"), Version: strings.TrimSpace(v.Get("version")),
		Attr: strings.TrimSpace(v.Get("attr"))}
	if q.Attr != "" {
		key, value, ok := strings.Cut(q.Attr, "=")
		if !ok {
			return q, errors.New("the attribute filter is " + strconv.Quote(q.Attr) + ": want key=value")
		}
		f := &world.AttributeFilter{Key: strings.TrimSpace(key), Value: strings.TrimSpace(value)}
		if err := f.Check(); err != nil {
			return q, errors.New("the attribute filter: " + err.Error())
		}
		q.Attribute = f
	}
	if st := v.Get("status"); st != "" {
		q.Status = world.RunStatus(st)
		ok := false
		for _, s := range statuses() {
			ok = ok || s == q.Status
		}
		if !ok {
			return q, errors.New("unknown status " + strconv.Quote(st))
		}
	}
	for _, f := range []struct {
		text string
		t    *time.Time
	}{{q.FromText, &q.From}, {q.ToText, &q.To}} {
		if f.text == "" {
			continue
		}
		t, err := time.ParseInLocation(timeInput, f.text, loc)
		if err != nil {
			t, err = time.ParseInLocation(timeInput+":05", f.text, loc) // what browsers send with seconds
		}
		if err != nil {
			if t, err = time.Parse(time.RFC3339, f.text); err != nil {
				return q, errors.New("a time is " + strconv.Quote(f.text) + ": want 2006-01-02T15:04 or RFC 3339")
			}
		}
		*f.t = t
	}
	return q, nil
}

// listed is one page of the runs list.
type listed struct {
	Query    listQuery
	Statuses []world.RunStatus
	Runs     []listedRun
	Self     string // this page's URL
	Next     string // the next page's URL, "" on the last one
	First    bool   // this is the first page
	Scanned  bool   // the time filter stopped the scan before the page was full
}

type listedRun struct {
	ID, Workflow, Status, Version string
	// Comp marks the run's compensations: "compensation failed",
	// "compensating" or "".
	Comp    string
	Created time.Time
	Took    string
}

// maxScan bounds the runs one list request reads past the filters applied
// here.
const maxScan = 10 * world.MaxPageLimit

// list serves the runs list.
func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q, err := parseListQuery(r.URL.Query(), time.Local)
	var c listCursor
	if err == nil {
		c, err = decodeCursor(q.Cursor)
	}
	if err != nil {
		s.failPage(w, r, http.StatusBadRequest, "Bad filter: "+err.Error()+".")
		return
	}
	out, err := s.listRuns(r.Context(), q, c)
	if err != nil {
		s.log.Error("webui: list runs", "err", err)
		s.failPage(w, r, http.StatusInternalServerError, "Could not list runs: "+err.Error())
		return
	}
	out.Self = r.URL.RequestURI()
	s.render(w, r, http.StatusOK, "list", "Runs", out)
}

// noVersion selects, and shows, the runs that recorded no version.
const noVersion = "-"

// keep reports whether r passes the filters the World does not apply: the
// version and the upper time bound (the lower one ends the read).
func (q listQuery) keep(r *world.Run) bool {
	switch {
	case !q.To.IsZero() && r.CreatedAt.After(q.To):
		return false
	case q.Version == noVersion:
		return r.Version == ""
	case q.Version != "":
		return r.Version == q.Version
	}
	return true
}

// older reports whether r was created before the lower time bound.
func (q listQuery) older(r *world.Run) bool { return !q.From.IsZero() && r.CreatedAt.Before(q.From) }

// local reports whether q has filters applied here rather than by the World.
func (q listQuery) local() bool { return !q.From.IsZero() || !q.To.IsZero() || q.Version != "" }

// listRuns reads one page of runs matching q from cursor c. The World
// filters by workflow, status and attribute; the creation-time bounds and the version
// are applied here, reading newest first and stopping at the first run
// older than From.
func (s *server) listRuns(ctx context.Context, q listQuery, c listCursor) (*listed, error) {
	size, now := s.pageSize, s.now()
	out := &listed{Query: q, Statuses: statuses(), First: q.Cursor == ""}
	read := 0
	for {
		// Without a time filter a World page is exactly the rest of ours.
		limit := size - len(out.Runs) + c.Skip
		if q.local() {
			limit = world.MaxPageLimit
		}
		p, err := s.world.ListRuns(ctx, &world.ListRunsParams{WorkflowName: q.Workflow, Status: q.Status, Attribute: q.Attribute,
			Pagination: world.Pagination{Limit: min(limit, world.MaxPageLimit), Cursor: c.World}})
		if err != nil {
			return nil, err
		}
		for i := c.Skip; i < len(p.Items); i++ {
			run := &p.Items[i]
			read++
			if q.older(run) {
				return out, nil // newest first: the rest is older still
			}
			if !q.keep(run) {
				continue
			}
			version := run.Version
			if version == "" {
				version = noVersion
			}
			out.Runs = append(out.Runs, listedRun{ID: run.RunID, Workflow: run.WorkflowName, Status: string(run.Status),
				Version: version, Comp: compMark(run), Created: run.CreatedAt, Took: took(run, now)})
			if len(out.Runs) == size {
				rest := p.Items[i+1:]
				if !p.HasMore && !slices.ContainsFunc(rest, func(r world.Run) bool { return q.keep(&r) && !q.older(&r) }) {
					return out, nil // nothing left to show: no next page
				}
				next := listCursor{World: c.World, Skip: i + 1}
				if len(rest) == 0 {
					next = listCursor{World: p.Cursor}
				}
				out.Next = s.pageURL(q, next)
				return out, nil
			}
		}
		if !p.HasMore {
			return out, nil
		}
		c = listCursor{World: p.Cursor}
		if read >= maxScan {
			out.Scanned = true
			out.Next = s.pageURL(q, c)
			return out, nil
		}
	}
}

// pageURL is the list's URL for q at cursor c.
func (s *server) pageURL(q listQuery, c listCursor) string {
	v := url.Values{}
	for k, x := range map[string]string{"workflow": q.Workflow, "status": string(q.Status), "from": q.FromText, "to": q.ToText, "version": q.Version, "attr": q.Attr} {
		if x != "" {
			v.Set(k, x)
		}
	}
	v.Set("cursor", c.encode())
	return "/?" + v.Encode()
}

// took is how long a run took, or has been going ("…").
func took(r *world.Run, now time.Time) string {
	if r.Status.Terminal() && !r.CompletedAt.IsZero() {
		return fmtDuration(r.CompletedAt.Sub(r.CreatedAt))
	}
	return fmtDuration(now.Sub(r.CreatedAt)) + "…"
}
