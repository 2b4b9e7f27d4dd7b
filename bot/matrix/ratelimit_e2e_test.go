package matrix_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/chatops"
)

// limiter is a reverse proxy in front of Dendrite (which does not rate-limit
// /send) that answers the next sends with 429 M_LIMIT_EXCEEDED and a
// retry_after_ms body, without a Retry-After header, as Dendrite does.
type limiter struct {
	mu      sync.Mutex
	fail    int
	waitMS  int64
	limited map[string]time.Time // path → when it was refused
	gaps    []time.Duration      // refused → next try of the same path
}

func (l *limiter) handler(target *url.URL) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // canceled long polls at shutdown
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/send/") {
			l.mu.Lock()
			if at, ok := l.limited[r.URL.Path]; ok {
				l.gaps = append(l.gaps, time.Since(at))
				delete(l.limited, r.URL.Path)
			}
			if l.fail > 0 {
				l.fail--
				l.limited[r.URL.Path] = time.Now()
				wait := l.waitMS
				l.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprintf(w, `{"errcode":"M_LIMIT_EXCEEDED","error":"You are sending too many requests too quickly!","retry_after_ms":%d}`, wait)
				return
			}
			l.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	})
}

func (l *limiter) set(fail int, waitMS int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail, l.waitMS = fail, waitMS
}

func (l *limiter) snapshot() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.gaps...)
}

// TestRateLimitRetryAfterMS: a 429 with retry_after_ms in the body is waited
// out for as long as it asks, and the message is sent once; a wait longer than
// the bot will hold a call is returned as a chatops.RateLimitError so the
// renderer pauses the workspace.
func TestRateLimitRetryAfterMS(t *testing.T) {
	w := newWorld(t, "postgres")
	target, _ := url.Parse(w.hs.URL)
	lim := &limiter{limited: map[string]time.Time{}}
	srv := httptest.NewServer(lim.handler(target))
	t.Cleanup(srv.Close)
	w.homeserver = srv.URL
	w.startBot(false)
	alice := w.human(w.alice, false)
	bob := w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bot := w.botUser.ID

	lim.set(2, 700)
	w.prov.add(script{before: []string{"Slow ", "and ", "steady."}, pause: 100 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": go", bot)
	evs := alice.wait("the answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "steady.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	if n := len(botPosts(evs, bot, room, root)); n != 1 {
		t.Errorf("bot posted %d messages, want 1:\n%s", n, dump(evs))
	}
	gaps := lim.snapshot()
	if len(gaps) != 2 {
		t.Fatalf("retries of refused sends: %v, want 2", gaps)
	}
	for _, g := range gaps {
		if g < 650*time.Millisecond || g > 5*time.Second {
			t.Errorf("retried %s after a 429 asking for 700 ms", g)
		}
	}
	if got := w.bot.RateLimited(); got != 2 {
		t.Errorf("RateLimited() = %d, want 2", got)
	}

	// A wait beyond RateLimitWait (30 s) comes back to the caller.
	lim.set(1, 120000)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := w.bot.Post(ctx, chatops.Place{Platform: matrix.Platform, Workspace: "localhost", Channel: string(room), Thread: string(root)}, chatops.View{Body: "never"})
	var rle *chatops.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != 120*time.Second || !errors.Is(err, chatops.ErrRateLimited) {
		t.Fatalf("Post = %v, want a RateLimitError of 120 s", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Post waited %s before returning the long limit", time.Since(start))
	}
}
