// ratelimit.go: HTTP 429 M_LIMIT_EXCEEDED handling. Homeservers put the wait in
// the JSON body (retry_after_ms; Dendrite sends no Retry-After header) and
// mautrix reads only the header, so this transport waits what the body (or the
// header) asks and retries, a bounded number of times, before letting the 429
// through as an error that says how long to wait.

package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"maunium.net/go/mautrix"

	"github.com/threadline-bot/threadline/chatops"
)

// rateLimitTransport retries 429 answers after the wait they ask for.
type rateLimitTransport struct {
	next http.RoundTripper
	// attempts bounds the retries of one request; waits longer than maxWait
	// are not waited here but returned to the caller.
	attempts int
	maxWait  time.Duration
	log      *slog.Logger
	// limited counts the 429 answers seen (tests read it).
	limited func()
}

// retryAfter reads the wait a 429 answer asks for: retry_after_ms from the
// body, else the Retry-After header (seconds), else fallback.
func retryAfter(header http.Header, body []byte, fallback time.Duration) time.Duration {
	var e struct {
		RetryAfterMS *int64 `json:"retry_after_ms"`
	}
	if json.Unmarshal(body, &e) == nil && e.RetryAfterMS != nil && *e.RetryAfterMS >= 0 {
		return time.Duration(*e.RetryAfterMS) * time.Millisecond
	}
	if s := header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(s); err == nil {
			return max(time.Until(t), 0)
		}
	}
	return fallback
}

func (t *rateLimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			return resp, err
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			return resp, nil
		}
		if t.limited != nil {
			t.limited()
		}
		wait := retryAfter(resp.Header, body, time.Second)
		if attempt > t.attempts || wait > t.maxWait || (req.Body != nil && req.GetBody == nil) {
			return resp, nil
		}
		t.log.DebugContext(req.Context(), "rate limited by the homeserver, waiting", "path", req.URL.Path, "wait", wait, "attempt", attempt)
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
		if req.GetBody != nil {
			nb, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = nb
		}
	}
}

// asRateLimit turns a 429 that outlived the retries into a
// *chatops.RateLimitError carrying the wait the homeserver asked for, so the
// renderer pauses the workspace; other errors are returned as they are.
func asRateLimit(err error, method string) error {
	if err == nil {
		return nil
	}
	var he mautrix.HTTPError
	if !errors.As(err, &he) || !errors.Is(err, mautrix.MLimitExceeded) {
		return err
	}
	wait := time.Second
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms >= 0 {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	if he.Response != nil && wait == time.Second {
		wait = retryAfter(he.Response.Header, nil, wait)
	}
	return errors.Join(&chatops.RateLimitError{RetryAfter: wait, Method: method}, err)
}
