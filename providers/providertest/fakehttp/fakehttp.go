// Package fakehttp is the base of the scripted fake model servers
// (claude/fakeapi, codex/fakeresponses, providertest/fakeopenai): an HTTP
// server on 127.0.0.1 that records the requests it was sent (Recorded), a
// server-sent-events writer, the script combinators the fakes share
// (script.go), and helpers for their tests (Post, AwaitLines).
package fakehttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// Logger is what a server logs to; testing.TB satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

// Server is a running loopback server recording requests of type R.
type Server[R any] struct {
	name string
	log  Logger
	ln   net.Listener
	srv  *http.Server
	url  string

	mu     sync.Mutex
	reqs   []R
	peers  []int // PeerUIDs
	closed bool

	closeOnce sync.Once
}

// Listen opens a server on 127.0.0.1:0 that serves once Serve is called;
// name prefixes the log lines and the listen panic. log may be nil; when it is
// a testing.TB (anything with Cleanup) the server is closed at cleanup.
func Listen[R any](name string, log Logger) *Server[R] {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("%s: listen: %v", name, err))
	}
	s := &Server[R]{name: name, log: log, ln: ln, url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.notePeer(c)
		}
	}}
	if c, ok := log.(interface{ Cleanup(func()) }); ok {
		c.Cleanup(s.Close)
	}
	return s
}

// Serve starts serving h. Call it once the handler is set up: what it wrote
// before happens before every request it serves.
func (s *Server[R]) Serve(h http.Handler) {
	s.srv.Handler = h
	go func() { _ = s.srv.Serve(s.ln) }()
}

// URL is the server's root, e.g. http://127.0.0.1:41234.
func (s *Server[R]) URL() string { return s.url }

// Close stops the server and drops open connections (streams in progress end).
func (s *Server[R]) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.srv.Close()
		_ = s.ln.Close() // when Serve was never called
	})
}

// Record appends a request.
func (s *Server[R]) Record(r R) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

// Requests returns a copy of every recorded request, in arrival order.
func (s *Server[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.reqs...)
}

// RequestsWhere returns the recorded requests for which keep holds, in
// arrival order.
func (s *Server[R]) RequestsWhere(keep func(R) bool) []R {
	var out []R
	for _, r := range s.Requests() {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Logf logs "<name>: <message>" until the server is closed (a test's log is
// gone after it ends).
func (s *Server[R]) Logf(format string, args ...any) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.log != nil && !closed {
		if h, ok := s.log.(interface{ Helper() }); ok {
			h.Helper()
		}
		s.log.Logf(s.name+": "+format, args...)
	}
}

// Recorded is what every fake records of a request; a fake's Request
// embeds it and adds the body as it parses it.
type Recorded struct {
	Method   string
	Path     string
	RawQuery string
	// Header is the request's without the secret headers (keys, tokens,
	// cookies).
	Header http.Header
	// Raw is the request body as received.
	Raw []byte
	// Time is when the request arrived.
	Time time.Time
}

// ReadRequest reads r's body (up to 64 MiB) and returns it recorded with a
// copy of the header from which the secret headers are dropped.
func ReadRequest(r *http.Request, secrets ...string) Recorded {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	h := r.Header.Clone()
	for _, k := range secrets {
		h.Del(k)
	}
	return Recorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: h, Raw: raw, Time: time.Now()}
}

// SSE writes server-sent events, flushing each.
type SSE struct {
	w   http.ResponseWriter
	fl  http.Flusher
	ctx context.Context
	err error
}

// NewSSE starts a 200 event stream on w (Content-Type text/event-stream;
// charset=utf-8 unless already set); ctx is the request's.
func NewSSE(w http.ResponseWriter, ctx context.Context) *SSE {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &SSE{w: w, fl: fl, ctx: ctx}
}

// Event writes "event: <name>" with v as JSON data. It reports whether the
// stream goes on: the write worked and the request is not done.
func (s *SSE) Event(name string, v any) bool {
	return s.write("event: " + name + "\ndata: " + mustJSON(v) + "\n\n")
}

// Data writes v as JSON data; see Event.
func (s *SSE) Data(v any) bool { return s.Raw(mustJSON(v)) }

// Raw writes data as it is (e.g. "[DONE]"); see Event.
func (s *SSE) Raw(data string) bool { return s.write("data: " + data + "\n\n") }

// Err is the first write error.
func (s *SSE) Err() error { return s.err }

func (s *SSE) write(ev string) bool {
	if _, err := io.WriteString(s.w, ev); err != nil {
		if s.err == nil {
			s.err = err
		}
		return false
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return s.ctx.Err() == nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Sleep waits d or until ctx is done; it reports whether ctx is still alive.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Post sends body to url with Content-Type application/json and header,
// failing t when it cannot be sent; the response body is closed when t ends.
func Post(t testing.TB, ctx context.Context, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// AwaitLines reads r until n lines holding substr were read (e.g. the first
// deltas of a slow stream, before a client hangs up); the error is the
// read's, when the stream ended first.
func AwaitLines(r *bufio.Reader, substr string, n int) error {
	for seen := 0; seen < n; {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("after %d of %d lines with %q: %w", seen, n, substr, err)
		}
		if strings.Contains(line, substr) {
			seen++
		}
	}
	return nil
}

var idSeq atomic.Int64

// NewID is a fresh id "<prefix>_fake_<n>" (n counts up in the process).
func NewID(prefix string) string { return fmt.Sprintf("%s_fake_%d", prefix, idSeq.Add(1)) }

// Tokens is the fakes' token count of a request body: one per four runes,
// at least one.
func Tokens(raw []byte) int { return max(1, utf8.RuneCount(raw)/4) }

// Clip shortens s to n bytes and an ellipsis.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
