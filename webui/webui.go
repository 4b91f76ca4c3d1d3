package webui

import (
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
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/skeinhttp"
	"github.com/skeinflow/skein/world"
)

//go:embed assets templates
var files embed.FS

// Config configures the dashboard.
type Config struct {
	// Client acts on runs (required).
	Client *client.Client
	// World is read for runs, events, steps, hooks and streams (default:
	// the Client's World).
	World world.World
	// Logger receives request errors (default: discarded).
	Logger *slog.Logger
	// ReadOnly hides the actions and refuses them with 403, for a store
	// this process may not write (a local store a worker holds).
	ReadOnly bool
	// ReadOnlyReason says why, on every page and in every refusal
	// (default: "this dashboard is read-only").
	ReadOnlyReason string
	// Hosts, when set, are the only host names (without port) requests
	// may name in their Host header; others get 403. Set it to the loopback
	// names on a dashboard bound to 127.0.0.1, so that a web page whose
	// name resolves to 127.0.0.1 (DNS rebinding) cannot read it.
	Hosts []string
	// PageSize is how many runs the list shows at a time (default 50, at
	// most world.MaxPageLimit).
	PageSize int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// DeadLetters, when set, adds the dead-letter page (/dlq): each dead
	// letter with the run it would resume, and a redrive action.
	DeadLetters DeadLetterQueue
}

// LoopbackHosts are the host names of a dashboard bound to a loopback
// address, for Config.Hosts.
func LoopbackHosts() []string { return []string{"localhost", "127.0.0.1", "::1"} }

func (c *Config) validate() error {
	if c.Client == nil {
		return errors.New("webui: Config.Client is required")
	}
	if c.World == nil {
		c.World = sdk.ClientWorld(c.Client)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ReadOnlyReason == "" {
		c.ReadOnlyReason = "this dashboard is read-only"
	}
	switch {
	case c.PageSize < 0:
		return fmt.Errorf("webui: Config.PageSize is negative (%d)", c.PageSize)
	case c.PageSize == 0:
		c.PageSize = 50
	case c.PageSize > world.MaxPageLimit:
		return fmt.Errorf("webui: Config.PageSize %d is over %d", c.PageSize, world.MaxPageLimit)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// server holds the dashboard's state: its config and parsed templates.
type server struct {
	cfg   Config
	log   *slog.Logger
	pages map[string]*template.Template
	hosts map[string]bool
}

// New returns the dashboard's handler. Mount it at the root of a mux.
func New(cfg Config) (http.Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: cfg.Logger, pages: map[string]*template.Template{}}
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
	events, err := skeinhttp.NewEvents(skeinhttp.EventsConfig{Client: cfg.Client, Logger: cfg.Logger, Retry: 2 * time.Second})
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
	p := page{Title: title, ReadOnly: s.cfg.ReadOnly, Reason: s.cfg.ReadOnlyReason, Data: data,
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
