package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The three forges are driven over their REST APIs with net/http: four
// calls each (get, list, create, update a pull request). Their Go SDKs
// (go-github, GitLab's client-go, Gitea's sdk) did the same in 3.3 MB of
// binary that every serve process mapped, whether a project had a forge or
// not, which took the idle serve over its 30 MB (cmd/threadline
// TestServeRSS).

// rest is one forge's JSON API at base (ending in the API's root path)
// with the headers that authenticate and version each request.
type rest struct {
	base    string
	headers http.Header
	hc      *http.Client
	s       scrubber
	// message reads the forge's error message from an error body.
	message func(body []byte) string
}

// maxBody bounds a response body read.
const maxBody = 8 << 20

// userAgent names Threadline to the forges (GitHub requires one).
const userAgent = "threadline"

// getRetries is how often a GET answered 429 or 5xx, or not answered, is
// tried again (writes are not: a create that failed with a 5xx may have
// happened); retryWait is the wait before the first retry, doubled each time.
const (
	getRetries = 2
	retryWait  = 300 * time.Millisecond
)

// call sends method path?query with in as its JSON body (nil: none) and
// decodes a 2xx answer's body into out. It returns the answer's header (for
// the next page) or the package's error of op.
func (r *rest) call(ctx context.Context, op string, pr PR, method, path string, query url.Values, in, out any) (http.Header, error) {
	u := r.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, errorf(ErrInvalid, "%s: %v", op, err)
		}
	}
	wait := retryWait
	for try := 0; ; try++ {
		status, h, b, err := r.do(ctx, method, u, body)
		retry := method == http.MethodGet && try < getRetries &&
			(err != nil || status == http.StatusTooManyRequests || status >= 500)
		if retry && ctx.Err() == nil {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
			wait *= 2
			continue
		}
		switch {
		case err != nil:
			return nil, r.s.fail(ctx, op, pr.repoName(), 0, err.Error())
		case status/100 != 2:
			msg := r.message(b)
			if msg == "" {
				msg = http.StatusText(status)
			}
			return nil, r.s.fail(ctx, op, pr.repoName(), status, msg)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return nil, r.s.fail(ctx, op, pr.repoName(), status, "unreadable answer: "+err.Error())
			}
		}
		return h, nil
	}
}

// do sends one request and reads its answer.
func (r *rest) do(ctx context.Context, method, u string, body []byte) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range r.headers {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		// url.Error repeats the address; the scrubber removes any token.
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// nextPage is the page after this one an answer announces: GitLab's
// X-Next-Page, else the page of the Link header's rel="next" (GitHub,
// Gitea); 0 when it is the last.
func nextPage(h http.Header) int {
	if h == nil {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("X-Next-Page"))); err == nil && n > 0 {
		return n
	}
	for _, link := range strings.Split(h.Get("Link"), ",") {
		target, params, ok := strings.Cut(link, ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(u.Query().Get("page")); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// jsonMessage reads {"message": ...} bodies (GitHub, Gitea; GitLab's
// message may be a list or an object of lists), with GitHub's "errors"
// details after it; else a short prefix of the body.
func jsonMessage(b []byte) string {
	var e struct {
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
		Errors  []struct {
			Field, Code, Message string
		} `json:"errors"`
	}
	if json.Unmarshal(b, &e) != nil {
		s := strings.TrimSpace(string(b))
		if len(s) > maxMessage {
			s = s[:maxMessage]
		}
		return s
	}
	msg := flatten(e.Message)
	if msg == "" {
		msg = e.Error
	}
	for _, d := range e.Errors {
		detail := d.Message
		if detail == "" {
			detail = strings.TrimSpace(d.Field + " " + d.Code)
		}
		if detail != "" {
			msg += "; " + detail
		}
	}
	return msg
}

// flatten renders a JSON string, list or object of them as one line.
func flatten(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		parts := make([]string, 0, len(list))
		for _, v := range list {
			parts = append(parts, flatten(v))
		}
		return strings.Join(parts, "; ")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		parts := make([]string, 0, len(obj))
		for k, v := range obj {
			parts = append(parts, k+" "+flatten(v))
		}
		return strings.Join(parts, "; ")
	}
	return string(raw)
}

// apiBase is baseURL with the API's root path (such as "/api/v4") added
// unless it already ends in it.
func apiBase(baseURL, root string) string {
	b := strings.TrimSuffix(baseURL, "/")
	if strings.HasSuffix(b, root) {
		return b
	}
	return b + root
}

// errNoBase: a forge that has no public default needs its base URL.
var errNoBase = errors.New("needs its base URL")

// numberPath is "/<n>".
func numberPath(n int) string { return fmt.Sprintf("/%d", n) }
