package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sealmark"
)

// pageChunks is how many of a stream's last chunks the run page shows.
const pageChunks = 500

// streams reads the run's output streams as they stand.
func (s *server) streams(ctx context.Context, runID string) ([]streamView, error) {
	names, err := s.cfg.Client.ListStreams(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []streamView
	for _, ns := range names {
		info, err := s.cfg.Client.StreamInfo(ctx, runID, ns)
		if err != nil {
			return nil, err
		}
		v := streamView{Name: ns, Label: ns, Next: info.TailIndex + 1, Done: info.Done,
			Src: "/runs/" + url.PathEscape(runID) + "/stream?" + url.Values{"ns": {ns}, "from": {strconv.FormatInt(info.TailIndex+1, 10)}}.Encode()}
		if ns == "" {
			v.Label = "default"
		}
		if info.TailIndex >= 0 {
			from := max(info.TailIndex-pageChunks+1, 0)
			v.Partial = from > 0
			text, err := s.readChunks(ctx, runID, ns, from, info.TailIndex)
			if err != nil {
				return nil, err
			}
			v.Text = text
		}
		out = append(out, v)
	}
	return out, nil
}

// readChunks reads chunks from..to of a stream (all written already).
func (s *server) readChunks(ctx context.Context, runID, ns string, from, to int64) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var b []byte
	for ch, err := range s.cfg.Client.ReadStream(ctx, runID, client.StreamOptions{Namespace: ns, Start: from}) {
		if _, kid, ok := sealmark.KeyOf(err); ok {
			// Sealed, and no key given opened it: say so where the text
			// would be, rather than fail the page.
			return string(b) + s.sealedNote(kid) + "\n", nil
		}
		if err != nil {
			return "", err
		}
		b = append(b, chunkText(ch)...)
		if ch.Index >= to {
			break
		}
	}
	return string(b), nil
}

// keyDescriber is a World that can say why data sealed with a key stayed
// sealed when read through it (an encrypting World that leaves what it
// cannot open sealed: no key with that ID, or a key that does not open
// it). The dashboard asks its World for it by this interface alone.
type keyDescriber interface {
	DescribeKey(keyID string) string
}

// sealedNote says that data sealed with key keyID stayed sealed, and why
// when the dashboard's World knows.
func (s *server) sealedNote(keyID string) string {
	if d, ok := s.world.(keyDescriber); ok {
		return d.DescribeKey(keyID)
	}
	return sealmark.Note(keyID, sealmark.NoKey)
}

// chunkText is how a chunk shows: its bytes as text, a JSON chunk as its
// JSON on a line of its own.
func chunkText(ch client.StreamChunk) string {
	if ch.JSON {
		return string(ch.Data) + "\n"
	}
	return string(ch.Data)
}

// stream serves a run's stream as Server-Sent Events: one "chunk" event
// per chunk from ?from= (or after the Last-Event-ID a reconnecting browser
// sends), each with the chunk's index as its ID and {"text": ...} as its
// data, then an "end" event once the stream is closed. The page's script
// appends the text as text, never as markup.
func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	run, ok := s.loadRun(w, r)
	if !ok {
		return
	}
	from, err := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if err != nil || from < 0 {
		from = 0
	}
	if id, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && id >= 0 {
		from = id + 1
	}
	ns := r.URL.Query().Get("ns")
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	_ = rc.Flush()
	for ch, err := range s.cfg.Client.ReadStream(r.Context(), run.RunID, client.StreamOptions{Namespace: ns, Start: from}) {
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Warn("webui: stream", "run", run.RunID, "stream", ns, "err", err)
			}
			return
		}
		data, _ := json.Marshal(map[string]string{"text": chunkText(ch)})
		if _, err := fmt.Fprintf(w, "id: %d\nevent: chunk\ndata: %s\n\n", ch.Index, data); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	_, _ = fmt.Fprint(w, "event: end\ndata: {}\n\n")
	_ = rc.Flush()
}
