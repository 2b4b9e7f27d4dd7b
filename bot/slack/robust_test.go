package slack_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestHostileSocketInput sends what crashed or lost work before: a
// view_submission without state, and a flood of 150 events in one thread.
func TestHostileSocketInput(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)

	t.Run("a view_submission without state: the bot lives, the person hears", func(t *testing.T) {
		h := start(t, st, options{})
		ref := chatops.Ref{ChatID: "c1", RunID: "r1", InteractionID: "i1"}.Encode()
		meta, _ := json.Marshal(map[string]any{"ref": ref, "place": chatops.Place{Platform: "slack", Workspace: "T0FAKE1", Channel: "C1", Thread: "1700000000.000001"}})
		payload := map[string]any{
			"type": "view_submission", "team": map[string]any{"id": "T0FAKE1"}, "user": map[string]any{"id": "UAPPROVER"},
			"view": map[string]any{"id": "V1", "type": "modal", "callback_id": "tl_answer", "private_metadata": string(meta)},
		}
		env, err := h.fake.Envelope("interactive", payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.fake.WaitAck(env, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the note to the person", func() bool {
			for _, c := range h.fake.Calls("chat.postEphemeral") {
				if c.Form.Get("user") == "UAPPROVER" && c.Form.Get("channel") == "C1" && c.Form.Get("thread_ts") == "1700000000.000001" &&
					strings.Contains(c.Form.Get("text"), "did not reach me") {
					return true
				}
			}
			return false
		})
		// Still serving: a mention afterwards runs.
		h.stack.Prov.Add(chatopstest.Answer("still here"))
		root := h.fake.PostUserMessage("C1", "", "hi")
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "hi")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the answer after the bad submission", func() bool {
			_, b, ok := finalAnswer(t, h.fake, "C1", root)
			return ok && b == "still here"
		})
		if n := h.bot.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
	})

	t.Run("150 events in one thread are all handled, in order", func(t *testing.T) {
		h := start(t, st, options{})
		release := make(chan struct{})
		defer close(release)
		h.stack.Prov.Add(chatopstest.Gated(release, "busy"))
		root := h.fake.PostUserMessage("C1", "", "start")
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "start")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the first run", func() bool { return len(h.stack.Prov.Requests()) == 1 })
		// Every later mention is queued behind the run and gets an hourglass on
		// its message; a slow reactions.add makes the bot's lane fill up.
		h.fake.Delay("reactions.add", 15*time.Millisecond)
		const n = 150
		var sent []string
		var envs []string
		for i := range n {
			ts := h.fake.PostUserMessage("C1", root, fmt.Sprintf("more %03d", i))
			sent = append(sent, ts)
			env, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", ts, root, fmt.Sprintf("more %03d", i))), 0)
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
		reacted := func() []string {
			var out []string
			for _, c := range h.fake.Calls("reactions.add") {
				if c.Form.Get("name") == "hourglass_flowing_sand" {
					out = append(out, c.Form.Get("timestamp"))
				}
			}
			return out
		}
		deadline := time.Now().Add(2 * time.Minute)
		for len(reacted()) < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		got := reacted()
		if len(got) != n {
			t.Fatalf("%d of %d events handled", len(got), n)
		}
		for i := range sent {
			if got[i] != sent[i] {
				t.Fatalf("event %d handled as %s, want %s (out of order)", i, got[i], sent[i])
			}
		}
		for _, env := range envs {
			if _, err := h.fake.WaitAck(env, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestHTTPLimits: the body is bounded while it is read and the signature
// headers are checked before a byte of it is.
func TestHTTPLimits(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{mode: slackbot.ModeHTTP})
	addr := strings.TrimPrefix(h.http.URL, "http://")

	t.Run("an oversized body is refused with 413", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), 1<<20+1)
		resp, _, _ := h.post(t, "/slack/events", "application/json", body, sign(body, time.Now()))
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		// Without a Content-Length (chunked), the limit applies while reading.
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/slack/events", struct{ *bytes.Reader }{bytes.NewReader(body)})
		for k, v := range sign(body, time.Now()) {
			req.Header[k] = v
		}
		req.ContentLength = -1
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked: status %d, want 413", res.StatusCode)
		}
	})

	for name, hdr := range map[string]string{
		"a missing signature": "X-Slack-Request-Timestamp: " + fmt.Sprint(time.Now().Unix()) + "\r\n",
		"an old timestamp":    fmt.Sprintf("X-Slack-Request-Timestamp: %d\r\nX-Slack-Signature: v0=%s\r\n", time.Now().Add(-time.Hour).Unix(), strings.Repeat("ab", 32)),
	} {
		t.Run(name+" is refused without reading the body", func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Promise a body and never send it: an answer proves it was not read.
			fmt.Fprintf(c, "POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n%s\r\n", hdr)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer while the body is unsent: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
		})
	}
}
