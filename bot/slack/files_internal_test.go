package slack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// TestDownloadRedirects: a file's download follows a redirect on Slack's
// host, with the token, and refuses one to another host, which never sees
// the token.
func TestDownloadRedirects(t *testing.T) {
	leaked := make(chan bool, 10)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked <- true
		}
		_, _ = io.WriteString(w, "elsewhere")
	}))
	defer elsewhere.Close()
	slackHost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/f", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/f", http.StatusFound)
		case "/f":
			if r.Header.Get("Authorization") != "Bearer xoxb-test" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			_, _ = io.WriteString(w, "the bytes")
		}
	}))
	defer slackHost.Close()
	s := &surface{token: "xoxb-test"}
	rc, _, err := s.download(context.Background(), slack.File{Name: "a.txt", URLPrivateDownload: slackHost.URL + "/moved"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "the bytes" {
		t.Errorf("same-host redirect: %q", b)
	}
	_, _, err = s.download(context.Background(), slack.File{Name: "a.txt", URLPrivateDownload: slackHost.URL + "/away"})
	if err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("redirect to another host: %v", err)
	}
	if len(leaked) > 0 {
		t.Error("the token reached another host")
	}
}
