package forge_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// token is the fakes' token; tokenEcho is a token the fakes repeat in their
// error messages, to show that no error carries it.
const token = "tok-3f9a1c55e0b24d7e"

// fakePR is a pull request as a fake forge keeps it.
type fakePR struct {
	Number            int
	Head, Base        string
	Title, Body       string
	State             string // open, closed, merged
	HiddenFromListing bool   // a listing misses it (a racing call opened it)
}

// fakeForge is the state and request log shared by the GitHub and GitLab
// fakes: each checks its requests against the API documentation and
// answers in the documented shapes.
type fakeForge struct {
	t  *testing.T
	mu sync.Mutex

	prs  []*fakePR
	next int
	log  []string // "METHOD escaped-path?sorted-query"

	// duplicates makes the fake open a second pull request for a head that
	// has one open, as Gitea 1.27 does when two creations race.
	duplicates bool

	// fail, when set, answers every request with this status and body.
	failStatus int
	failBody   string
}

func (f *fakeForge) record(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := r.Method + " " + r.URL.EscapedPath()
	if q := r.URL.Query(); len(q) > 0 {
		line += "?" + sortedQuery(q)
	}
	f.log = append(f.log, line)
}

// requests returns the logged requests and clears the log.
func (f *fakeForge) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.log
	f.log = nil
	return out
}

func sortedQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	return strings.Join(parts, "&")
}

func (f *fakeForge) find(number int) *fakePR {
	for _, p := range f.prs {
		if p.Number == number {
			return p
		}
	}
	return nil
}

func (f *fakeForge) openFor(head string) *fakePR {
	for _, p := range f.prs {
		if p.Head == head && p.State == "open" {
			return p
		}
	}
	return nil
}

func (f *fakeForge) add(p fakePR) *fakePR {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	if p.Number == 0 {
		p.Number = f.next
	}
	if p.State == "" {
		p.State = "open"
	}
	f.prs = append(f.prs, &p)
	return &p
}

// decodeBody decodes a JSON object body and checks its keys against the
// API's documented names: every one of required, the rest among optional,
// at least one key in all.
func decodeBody(t *testing.T, r *http.Request, required []string, optional ...string) map[string]any {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read body: %v", err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Errorf("%s %s: body %q is not a JSON object: %v", r.Method, r.URL.Path, b, err)
		return nil
	}
	if len(m) == 0 {
		t.Errorf("%s %s: empty body", r.Method, r.URL.Path)
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			t.Errorf("%s %s: body %s lacks %q", r.Method, r.URL.Path, b, k)
		}
	}
	for k := range m {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			t.Errorf("%s %s: body %s has the undocumented or unexpected key %q", r.Method, r.URL.Path, b, k)
		}
	}
	return m
}

// checkRequests compares the requests a fake logged with want.
func checkRequests(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
