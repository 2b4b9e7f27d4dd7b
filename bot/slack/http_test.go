package slack_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestHTTPEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		h := start(t, st, options{mode: slackbot.ModeHTTP})
		const jsonCT = "application/json"

		t.Run("url verification", func(t *testing.T) {
			body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
			resp, got, _ := h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			if resp.StatusCode != http.StatusOK || got != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
				t.Fatalf("challenge answer %d %q", resp.StatusCode, got)
			}
		})

		t.Run("forged, stale and unsigned requests are refused", func(t *testing.T) {
			root := h.fake.PostUserMessage("C1", "", "hi")
			body, _ := json.Marshal(callback(eventID(), mention("UALLOWED", "C1", root, "", "hi")))
			forged := sign(body, time.Now())
			forged.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
			tampered := sign(body, time.Now())
			stale := sign(body, time.Now().Add(-6*time.Minute))
			for name, hdr := range map[string]http.Header{"forged": forged, "stale": stale, "unsigned": {}} {
				resp, _, _ := h.post(t, "/slack/events", jsonCT, body, hdr)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s request: status %d", name, resp.StatusCode)
				}
			}
			other := []byte(strings.Replace(string(body), "hi", "rm -rf /", 1))
			if resp, _, _ := h.post(t, "/slack/events", jsonCT, other, tampered); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("tampered body: status %d", resp.StatusCode)
			}
			// Interactivity and commands are checked the same way.
			p := formPayload(map[string]any{"type": "block_actions"})
			for _, path := range []string{"/slack/interactivity", "/slack/commands"} {
				if resp, _, _ := h.post(t, path, "application/x-www-form-urlencoded", p, stale); resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s stale: status %d", path, resp.StatusCode)
				}
			}
			time.Sleep(100 * time.Millisecond)
			if n := len(h.stack.Prov.Requests()); n != 0 {
				t.Fatalf("%d runs from refused requests", n)
			}
		})

		t.Run("acked at once, run once despite retries", func(t *testing.T) {
			release := make(chan struct{})
			h.stack.Prov.Add(chatopstest.Gated(release, "slow answer"))
			root := h.fake.PostUserMessage("C1", "", "work")
			body, _ := json.Marshal(callback(eventID(), mention("UALLOWED", "C1", root, "", "work")))
			resp, _, took := h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Fatalf("ack %d after %s", resp.StatusCode, took)
			}
			for retry := 1; retry <= 2; retry++ {
				hdr := sign(body, time.Now())
				hdr.Set("X-Slack-Retry-Num", string(rune('0'+retry)))
				hdr.Set("X-Slack-Retry-Reason", "http_timeout")
				if resp, _, took := h.post(t, "/slack/events", jsonCT, body, hdr); resp.StatusCode != http.StatusOK || took > time.Second {
					t.Fatalf("retry ack %d after %s", resp.StatusCode, took)
				}
			}
			chatopstest.WaitFor(t, "the run", func() bool { return len(h.stack.Prov.Requests()) == 1 })
			close(release)
			chatopstest.WaitFor(t, "the answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "C1", root); return ok && b == "slow answer" })
			time.Sleep(200 * time.Millisecond)
			if n := len(h.stack.Prov.Requests()); n != 1 {
				t.Fatalf("%d runs for one event and two retries", n)
			}
		})

		t.Run("buttons and modal over the interactivity endpoint", func(t *testing.T) {
			got := make(chan agent.InteractionResponse, 1)
			h.stack.Prov.Add(chatopstest.Asking("perm-1", "git push --force", got, "Pushed."))
			root := h.fake.PostUserMessage("C1", "", "push it")
			body, _ := json.Marshal(callback(eventID(), mention("UALLOWED", "C1", root, "", "push it")))
			h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			var decline chatops.Button
			chatopstest.WaitFor(t, "the card", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					for _, b := range buttons(t, m) {
						if b.ID == chatops.ButtonDecline {
							decline = b
							return true
						}
					}
				}
				return false
			})
			p := formPayload(blockActions(h.fake, "UAPPROVER", "C1", root, decline))
			resp, _, took := h.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", p, sign(p, time.Now()))
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Fatalf("interactivity ack %d after %s", resp.StatusCode, took)
			}
			select {
			case r := <-got:
				if r.InteractionID != "perm-1" || r.Decision != agent.DecisionDecline {
					t.Fatalf("response %+v", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the decline did not reach the agent")
			}
			chatopstest.WaitFor(t, "the card says who declined", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if b, _ := blockText(t, m); strings.Contains(b, "**Declined** by <@UAPPROVER>") {
						return true
					}
				}
				return false
			})
			// A view_submission with an empty answer gets response_action errors.
			sub := formPayload(map[string]any{"type": "view_submission", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UAPPROVER"},
				"view": map[string]any{"id": "V1", "callback_id": "tl_answer", "private_metadata": "{}",
					"state": map[string]any{"values": map[string]any{"q:q1": map[string]any{"answer": map[string]any{"type": "plain_text_input", "value": ""}}}}}})
			resp, out, _ := h.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", sub, sign(sub, time.Now()))
			if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"response_action":"errors"`) {
				t.Fatalf("empty submission answered %d %s", resp.StatusCode, out)
			}
		})

		t.Run("slash command over http", func(t *testing.T) {
			form := []byte(url.Values{"command": {"/threadline"}, "text": {"agents"}, "team_id": {slacktest.TeamID},
				"channel_id": {"C1"}, "user_id": {"UALLOWED"}, "token": {"legacy"}}.Encode())
			resp, _, took := h.post(t, "/slack/commands", "application/x-www-form-urlencoded", form, sign(form, time.Now()))
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Fatalf("command ack %d after %s", resp.StatusCode, took)
			}
			chatopstest.WaitFor(t, "the reply", func() bool {
				for _, c := range h.fake.Calls("chat.postEphemeral") {
					if c.Form.Get("user") == "UALLOWED" && strings.Contains(c.Form.Get("text"), "No agents are configured") {
						return true
					}
				}
				return false
			})
		})

		t.Run("files and images from a thread reply", func(t *testing.T) {
			h.stack.Prov.Add(chatopstest.Answer("first"), chatopstest.Answer("read it"))
			before := len(h.stack.Prov.Requests())
			root := h.fake.PostUserMessage("C1", "", "start")
			body, _ := json.Marshal(callback(eventID(), mention("UALLOWED", "C1", root, "", "start")))
			h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			chatopstest.WaitFor(t, "the first answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "C1", root); return ok && b == "first" })
			docID, docURL := h.fake.AddFile("notes.txt", "text/plain", []byte("remember the milk"))
			imgID, imgURL := h.fake.AddFile("screen.png", "image/png", []byte("\x89PNG fake"))
			reply := h.fake.PostUserMessage("C1", root, "see attached")
			ev := mention("UALLOWED", "C1", reply, root, "see attached")
			ev["files"] = []map[string]any{
				{"id": docID, "name": "notes.txt", "mimetype": "text/plain", "size": 17, "url_private_download": docURL},
				{"id": imgID, "name": "screen.png", "mimetype": "image/png", "size": 10, "url_private_download": imgURL},
			}
			body, _ = json.Marshal(callback(eventID(), ev))
			h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			chatopstest.WaitFor(t, "the second run", func() bool { return len(h.stack.Prov.Requests()) == before+2 })
			reqs := h.stack.Prov.Requests()
			req := reqs[len(reqs)-1]
			if !strings.Contains(req.Prompt, "notes.txt") || len(req.Images) != 1 || string(req.Images[0].Data) != "\x89PNG fake" {
				t.Fatalf("request prompt %q images %d", req.Prompt, len(req.Images))
			}

			// A file that declares 10 B and serves 200 MiB is cut off at the
			// limit while it downloads, said in the thread, and the prompt
			// still goes to the agent.
			h.stack.Prov.Add(chatopstest.Answer("without it"))
			bigID, bigURL := h.fake.AddFile("dump.bin", "application/octet-stream", []byte("tiny"))
			h.fake.ServeSize(bigID, 200<<20)
			reply = h.fake.PostUserMessage("C1", root, "and this one")
			ev = mention("UALLOWED", "C1", reply, root, "and this one")
			ev["files"] = []map[string]any{{"id": bigID, "name": "dump.bin", "mimetype": "application/octet-stream", "size": 10, "url_private_download": bigURL}}
			body, _ = json.Marshal(callback(eventID(), ev))
			h.post(t, "/slack/events", jsonCT, body, sign(body, time.Now()))
			chatopstest.WaitFor(t, "the third run", func() bool { return len(h.stack.Prov.Requests()) == before+3 })
			chatopstest.WaitFor(t, "the note of the file not read", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if strings.Contains(m.Text+string(m.Blocks), "Not read, so the agent does not get them: dump.bin (over the 20 MB limit)") {
						return true
					}
				}
				return false
			})
			if served := h.fake.Served(bigID); served > 40<<20 {
				t.Errorf("the download went on for %d bytes past a 20 MB limit", served)
			}
		})
	})
}
