package webui

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/skeinhttp"
	"github.com/skeinflow/skein/world"
)

//go:embed assets templates
var files embed.FS

// Config configures the dashboard.
type Config struct {
	// Client acts on runs (required). The dashboard reads runs, events,
	// steps, hooks and streams from its World, and logs request errors to
	// its Logger.
	Client *client.Client
	// ReadOnlyReason, when set, makes the dashboard read-only: it hides the
	// actions and refuses them with 403, for a store this process may not
	// write (a local store a worker holds), and says why on every page and
	// in every refusal.
	ReadOnlyReason string
	// Hosts, when set, are the only host names (without port) requests
	// may name in their Host header; others get 403. Set it to the loopback
	// names on a dashboard bound to 127.0.0.1, so that a web page whose
	// name resolves to 127.0.0.1 (DNS rebinding) cannot read it.
	Hosts []string
	// DeadLetters, when set, adds the dead-letter page (/dlq): each dead
	// letter with the run it would resume, and a redrive action.
	DeadLetters DeadLetterQueue
}

// LoopbackHosts are the host names of a dashboard bound to a loopback
// address, for Config.Hosts.
func LoopbackHosts() []string { return []string{"localhost", "127.0.0.1", "::1"} }

// defaultPageSize is how many runs the list shows at a time.
const defaultPageSize = 50

// eventsRetry is the reconnection delay the dashboard's event stream
// suggests to the browser.
const eventsRetry = 2 * time.Second

// server holds the dashboard's state: its config, what it takes from the
// Client, and parsed templates.
type server struct {
	cfg      Config
	world    world.World // the Client's
	log      *slog.Logger
	now      func() time.Time
	pageSize int
	pages    map[string]*template.Template
	hosts    map[string]bool
}

// newServer checks cfg and applies the knobs k holds.
func newServer(cfg Config, k knobs.Set) (*server, error) {
	if cfg.Client == nil {
		return nil, errors.New("webui: Config.Client is required")
	}
	s := &server{cfg: cfg, world: sdk.ClientWorld(cfg.Client), log: sdk.ClientLogger(cfg.Client),
		now: k.Now, pageSize: k.PageSize, pages: map[string]*template.Template{}}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case s.pageSize < 0 || s.pageSize > world.MaxPageLimit:
		return nil, fmt.Errorf("webui: page size %d: want 1 to %d", s.pageSize, world.MaxPageLimit)
	case s.pageSize == 0:
		s.pageSize = defaultPageSize
	}
	return s, nil
}

// readOnly says whether the dashboard refuses actions.
func (s *server) readOnly() bool { return s.cfg.ReadOnlyReason != "" }

// New returns the dashboard's handler. Mount it at the root of a mux.
// Options are for Skein's own tests.
func New(cfg Config, opts ...knobs.Option) (http.Handler, error) {
	k := knobs.Apply(opts)
	s, err := newServer(cfg, k)
	if err != nil {
		return nil, err
	}
	if len(cfg.Hosts) > 0 {
		s.hosts = map[string]bool{}
		for _, h := range cfg.Hosts {
			s.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
		}
	}
	for _, name := range []string{"list", "run", "error", "dlq"} {
		t, err := template.New("layout.html").Funcs(funcs()).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("webui: template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		return nil, err
	}
	events, err := skeinhttp.NewEvents(skeinhttp.EventsConfig{Client: cfg.Client}, knobs.WithHeartbeat(k.Heartbeat, cmp.Or(k.Retry, eventsRetry)))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /events", events)
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /runs/{id}", s.run)
	mux.HandleFunc("GET /runs/{id}/stream", s.stream)
	mux.HandleFunc("POST /runs/{id}/cancel", s.action(s.cancel))
	mux.HandleFunc("POST /runs/{id}/rerun", s.action(s.rerun))
	mux.HandleFunc("POST /runs/{id}/retry", s.action(s.retry))
	mux.HandleFunc("POST /runs/{id}/fail", s.action(s.fail))
	mux.HandleFunc("POST /runs/{id}/resume", s.action(s.resume))
	mux.HandleFunc("GET /dlq", s.dlq)
	mux.HandleFunc("POST /dlq/redrive", s.redrive)
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheAssets(http.FileServerFS(assets))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail404(w, r, "no such page")
	})
	return s.guard(mux), nil
}

// guard checks the Host header and sets the headers every response gets.
func (s *server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		if s.hosts != nil && !s.hosts[hostOnly(r.Host)] {
			http.Error(w, "webui: this dashboard answers only to "+strings.Join(s.cfg.Hosts, ", ")+" (Host "+r.Host+" refused)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is a Host header's host name, without port or brackets, in
// lower case.
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// page is what every template gets: the page's own data and the layout's.
type page struct {
	Title    string
	ReadOnly bool
	Reason   string
	CSRF     string
	Notice   string
	// DLQ: the dashboard has a dead-letter page (Config.DeadLetters).
	DLQ  bool
	Data any
}

// render writes a page with status code.
func (s *server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	p := page{Title: title, ReadOnly: s.readOnly(), Reason: s.cfg.ReadOnlyReason, Data: data,
		CSRF: s.csrfToken(w, r), Notice: notices(r.URL.Query().Get("done")), DLQ: s.cfg.DeadLetters != nil}
	if r.URL.Query().Get("done") == "redrive" {
		p.Notice = redriveNotice(r)
	}
	var b strings.Builder
	if err := s.pages[name].Execute(&b, p); err != nil {
		s.log.Error("webui: render", "page", name, "err", err)
		http.Error(w, "webui: could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// fail404 and failPage render the error page.
func (s *server) fail404(w http.ResponseWriter, r *http.Request, msg string) {
	s.failPage(w, r, http.StatusNotFound, msg)
}

func (s *server) failPage(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "error", http.StatusText(code), msg)
}

// notices are the fixed messages a redirect after an action may show; the
// query names one, so that no text of the URL reaches the page.
func notices(key string) string {
	switch key {
	case "cancel":
		return "Cancellation recorded: the run stops at its next step."
	case "resume":
		return "Payload sent to the hook: the run resumes when a worker picks it up."
	case "rerun":
		return "Started: this is the new run, with the same workflow and input."
	case "retry":
		return "Retry scheduled: the held run replays with the code deployed now."
	case "fail":
		return "The held run is failed."
	}
	return ""
}
