package dendritetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyTransport: a locked database and a 429 are retried (after the
// retry_after_ms asked for) until the server answers; another 500 is not;
// a server that exited ends the retries.
func TestBusyTransport(t *testing.T) {
	var calls atomic.Int32
	answers := []struct {
		status int
		body   string
	}{
		{500, `{"errcode":"M_UNKNOWN","error":"database is locked (5) (SQLITE_BUSY)"}`},
		{429, `{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":120}`},
		{200, `{"ok":true}`},
		{500, `{"errcode":"M_UNKNOWN","error":"internal"}`},
	}
	var bodies []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		a := answers[min(int(calls.Add(1))-1, len(answers)-1)]
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer hs.Close()
	done := make(chan struct{})
	cli := &http.Client{Transport: &busyTransport{next: http.DefaultTransport, done: done}}
	start := time.Now()
	resp, err := cli.Post(hs.URL, "application/json", strings.NewReader(`{"x":1}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	_ = resp.Body.Close()
	if calls.Load() != 3 || time.Since(start) < 170*time.Millisecond || bodies[2] != `{"x":1}` {
		t.Errorf("%d calls in %s, last body %q", calls.Load(), time.Since(start), bodies[len(bodies)-1])
	}
	resp, err = cli.Get(hs.URL)
	if err != nil || resp.StatusCode != 500 || calls.Load() != 4 {
		t.Fatalf("a plain 500 was retried: %v %v after %d calls", resp, err, calls.Load())
	}
	_ = resp.Body.Close()

	answers = answers[:1] // locked for good
	close(done)           // and the server is gone
	resp, err = cli.Get(hs.URL)
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("%v %v", resp, err)
	}
	_ = resp.Body.Close()
}
