package forge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestNextPage(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want int
	}{
		{nil, 0},
		{http.Header{}, 0},
		{http.Header{"X-Next-Page": {"3"}}, 3},
		{http.Header{"X-Next-Page": {""}}, 0},
		// GitHub's and Gitea's Link header.
		{http.Header{"Link": {`<https://api.github.com/repositories/1300192/pulls?page=2&per_page=100>; rel="next", <https://api.github.com/repositories/1300192/pulls?page=5&per_page=100>; rel="last"`}}, 2},
		{http.Header{"Link": {`<https://api.github.com/repositories/1300192/pulls?page=1>; rel="prev", <https://api.github.com/repositories/1300192/pulls?page=1>; rel="first"`}}, 0},
		{http.Header{"Link": {`<http://127.0.0.1:3000/api/v1/repos/o/r/pulls?limit=50&page=2&state=open>; rel="next"`}}, 2},
	} {
		if got := nextPage(tc.h); got != tc.want {
			t.Errorf("nextPage(%v) = %d, want %d", tc.h, got, tc.want)
		}
	}
}

func TestJSONMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"message":"Bad credentials"}`: "Bad credentials",
		`{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"base","code":"invalid"}]}`: "Validation Failed; base invalid",
		`{"message":["Another open merge request already exists for this source branch: !1"]}`:                  "Another open merge request already exists for this source branch: !1",
		`{"message":{"target_branch":["is invalid"]}}`:                                                          "target_branch is invalid",
		`{"error":"insufficient_scope"}`:                                                                        "insufficient_scope",
		`<html>bad gateway</html>`:                                                                              "<html>bad gateway</html>",
	} {
		if got := jsonMessage([]byte(body)); got != want {
			t.Errorf("jsonMessage(%s) = %q, want %q", body, got, want)
		}
	}
}

// TestRetries: a GET answered 503 is tried again; a POST is not (it may
// have been done).
func TestRetries(t *testing.T) {
	var gets, posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if gets.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"number":4}`))
	}))
	defer srv.Close()
	r := rest{base: srv.URL, hc: srv.Client(), message: jsonMessage}
	var out struct{ Number int }
	if _, err := r.call(t.Context(), "read", PR{}, http.MethodGet, "/x", nil, nil, &out); err != nil || out.Number != 4 {
		t.Fatalf("GET: %v, %+v", err, out)
	}
	if gets.Load() != 2 {
		t.Errorf("%d GETs, want 2", gets.Load())
	}
	_, err := r.call(t.Context(), "open", PR{}, http.MethodPost, "/x", nil, map[string]string{"a": "b"}, nil)
	if !errors.Is(err, ErrUnavailable) || posts.Load() != 1 {
		t.Errorf("POST: %v after %d tries, want ErrUnavailable after 1", err, posts.Load())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.call(ctx, "read", PR{}, http.MethodGet, "/x", nil, nil, &out); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled GET: %v", err)
	}
}
