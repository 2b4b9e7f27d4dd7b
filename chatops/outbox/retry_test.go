// Tests of the outbox's retries of a platform that fails for now (5xx,
// timeouts): issue 30.

package outbox_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/chatops/outbox"
)

// syncBuffer is a log sink safe for the outbox's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// slackStatus stands for slack-go's StatusCodeError.
type slackStatus struct{ code int }

func (e slackStatus) Error() string       { return http.StatusText(e.code) }
func (e slackStatus) HTTPStatusCode() int { return e.code }

// matrixStatus stands for mautrix's HTTPError.
type matrixStatus struct{ code int }

func (e matrixStatus) Error() string          { return http.StatusText(e.code) }
func (e matrixStatus) IsStatus(code int) bool { return e.code == code }

var fastRetry = outbox.Budget{MinInterval: time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond,
	Post: outbox.Rate{PerMinute: 60000, Burst: 100}, Update: outbox.Rate{PerMinute: 60000, Burst: 100}}

func TestUnavailableIsRetried(t *testing.T) {
	for name, fail := range map[string]error{
		"UnavailableError":       &outbox.UnavailableError{Method: "chat.update", Status: 500},
		"ErrUnavailable wrapped": errors.Join(errors.New("chat.update"), outbox.ErrUnavailable),
		"a library's status 503": slackStatus{http.StatusServiceUnavailable},
		"a library's status 502": matrixStatus{http.StatusBadGateway},
		"a request timeout":      matrixStatus{http.StatusRequestTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			// Nine failures in a row, three times MaxAttempts: the final
			// content still arrives.
			p := &platform{fail: func(c call, n int) error {
				if n <= 9 {
					return fail
				}
				return nil
			}}
			o := outbox.New(p, nil, fastRetry, false, nil)
			o.Put("c1", "r1", place, 1, 1, answer(0, "the whole answer", true))
			start(t, o)
			flush(t, o, "r1")
			cs := p.log()
			if len(cs) != 10 || cs[9].body != "the whole answer" {
				t.Fatalf("%d calls, last %+v", len(cs), cs[len(cs)-1])
			}
			if s := o.Stats(); s.Failures != 9 {
				t.Errorf("stats %+v", s)
			}
		})
	}
	t.Run("a refusal is not retried past MaxAttempts", func(t *testing.T) {
		p := &platform{fail: func(call, int) error { return slackStatus{http.StatusBadRequest} }}
		o := outbox.New(p, nil, fastRetry, false, nil)
		o.Put("c1", "r1", place, 1, 1, answer(0, "hi", false))
		start(t, o)
		flush(t, o, "r1")
		if cs := p.log(); len(cs) != 3 {
			t.Fatalf("%d calls, want 3", len(cs))
		}
	})
}

func TestUnavailableHonoursRetryAfter(t *testing.T) {
	p := &platform{fail: func(c call, n int) error {
		if n == 1 {
			return &outbox.UnavailableError{Method: "chat.postMessage", Status: 503, RetryAfter: 300 * time.Millisecond}
		}
		return nil
	}}
	o := outbox.New(p, nil, fastRetry, false, nil)
	o.Put("c1", "r1", place, 1, 1, answer(0, "hi", true))
	start(t, o)
	flush(t, o, "r1")
	cs := p.log()
	if len(cs) != 2 {
		t.Fatalf("%d calls, want 2", len(cs))
	}
	if d := cs[1].at.Sub(cs[0].at); d < 300*time.Millisecond {
		t.Errorf("retried after %s, want the 300ms Slack asked", d)
	}
}

// A final answer the platform keeps failing is given up after RetryFor,
// and said as an error: never silently.
func TestUnavailableGivesUpAfterRetryFor(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p := &platform{fail: func(call, int) error { return slackStatus{http.StatusInternalServerError} }}
	b := fastRetry
	b.RetryFor = 100 * time.Millisecond
	o := outbox.New(p, nil, b, false, log)
	o.Put("c1", "r1", place, 1, 1, answer(0, "the end", true))
	began := time.Now()
	start(t, o)
	flush(t, o, "r1")
	if d := time.Since(began); d < b.RetryFor {
		t.Errorf("gave up after %s, before RetryFor", d)
	}
	if n := len(p.log()); n < 4 {
		t.Errorf("%d calls: the backoff should allow more tries in %s", n, b.RetryFor)
	}
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "giving up on a message update") || !strings.Contains(out, "run_id=r1") {
		t.Errorf("no error logged:\n%s", out)
	}
}

func TestBudgetRetryDefaults(t *testing.T) {
	b := outbox.Budget{}.WithDefaults()
	if b.RetryMin != 250*time.Millisecond || b.RetryMax != 10*time.Second || b.RetryFor != 30*time.Minute {
		t.Errorf("defaults %+v", b)
	}
}
