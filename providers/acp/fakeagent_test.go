// A scripted fake ACP agent: the test binary re-executed with ACP_FAKE=1.
// The prompt text picks the behaviour (see fakePrompt).

package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// Fake agent environment.
const (
	envFake      = "ACP_FAKE"        // "1" turns the test binary into the fake agent
	envRecord    = "ACP_FAKE_RECORD" // argv, env and every stdin line are appended here (providertest.OpenRecord), the cwd is in <record>.cwd
	envProto     = "ACP_FAKE_PROTO"  // protocolVersion answered (default 1)
	envNoLoad    = "ACP_FAKE_NOLOAD" // "1": loadSession false
	envLateLoad  = "ACP_FAKE_LATE"   // "1": answer session/load first, replay after
	envStay      = "ACP_FAKE_STAY"   // "1": stay after stdin's end until killed (codex-acp, claude-agent-acp)
	fakeSession  = "fake-session-1"
	knownSession = "known-session"
)

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if os.Getenv(envFake) == "1" {
		os.Exit(providertest.ServeFake("fake-acp 9.9.9", os.Getenv(envRecord), fakeAgent))
	}
	providertest.Main(m)
}

type fakeConn struct {
	mu      sync.Mutex
	out     *providertest.LineWriter
	waiters map[string]chan json.RawMessage // agent request id → client's answer
	cancel  chan struct{}
	cwd     string
}

func (c *fakeConn) send(v any) { c.out.Send(v) }

func (c *fakeConn) result(id json.RawMessage, v any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func (c *fakeConn) fail(id json.RawMessage, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

func (c *fakeConn) update(u map[string]any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": fakeSession, "update": u}})
}

func chunk(kind, text string) map[string]any {
	return map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": text}}
}

// call sends an agent → client request and returns the channel of its answer.
func (c *fakeConn) call(id any, method string, params any) chan json.RawMessage {
	raw, _ := json.Marshal(id)
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.waiters[string(raw)] = ch
	c.mu.Unlock()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return ch
}

func (c *fakeConn) cancelled(d time.Duration) bool {
	select {
	case <-c.cancel:
		return true
	case <-time.After(d):
		return false
	}
}

// fakeAgent serves the client on stdin/stdout (see ServeFake), keeping
// every line it reads in rec.
func fakeAgent(rec *os.File) int {
	cwd, _ := os.Getwd()
	_ = os.WriteFile(os.Getenv(envRecord)+".cwd", []byte(cwd), 0o600)
	c := &fakeConn{out: providertest.NewLineWriter(), waiters: map[string]chan json.RawMessage{}, cancel: make(chan struct{}, 1), cwd: cwd}
	var prompts sync.WaitGroup
	providertest.RecordLines(rec, func(line []byte) bool {
		var m rpcMessage
		if json.Unmarshal(line, &m) != nil {
			return true
		}
		switch m.Method {
		case "initialize":
			proto := json.RawMessage("1")
			if v := os.Getenv(envProto); v != "" {
				proto = json.RawMessage(v)
			}
			c.result(m.ID, map[string]any{
				"protocolVersion":   proto,
				"agentCapabilities": map[string]any{"loadSession": os.Getenv(envNoLoad) != "1", "promptCapabilities": map[string]any{"image": true}},
				"agentInfo":         map[string]any{"name": "fake-acp", "version": "9.9.9"},
			})
		case "session/new":
			c.result(m.ID, map[string]any{"sessionId": fakeSession, "configOptions": []any{
				map[string]any{"id": "model", "category": "model", "type": "select", "currentValue": "m1",
					"options": []any{map[string]any{"value": "m1", "name": "M1"}, map[string]any{"value": "m2", "name": "M2"}}},
				map[string]any{"id": "mode", "category": "mode", "type": "select", "currentValue": "build",
					"options": []any{map[string]any{"value": "build", "name": "build"}, map[string]any{"value": "plan", "name": "plan"}}},
			}})
		case "session/load":
			var p sessionParams
			_ = json.Unmarshal(m.Params, &p)
			if p.SessionID != knownSession {
				c.fail(m.ID, CodeResourceNotFound, "Resource not found: session:"+p.SessionID, map[string]any{"uri": "session:" + p.SessionID})
				return true
			}
			replay := func() {
				c.update(chunk("user_message_chunk", "old question"))
				c.update(chunk("agent_message_chunk", "OLD ANSWER"))
				c.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "old-1", "title": "old tool", "status": "completed"})
			}
			if os.Getenv(envLateLoad) == "1" {
				c.result(m.ID, map[string]any{})
				time.Sleep(30 * time.Millisecond)
				replay()
			} else {
				replay()
				c.result(m.ID, map[string]any{})
			}
		case "session/set_config_option":
			var p map[string]string
			_ = json.Unmarshal(m.Params, &p)
			if p["value"] == "bad-model" {
				c.fail(m.ID, CodeInvalidParams, "Invalid params: unknown model bad-model", nil)
				return true
			}
			c.result(m.ID, map[string]any{"configOptions": []any{}})
		case "session/prompt":
			var p promptParams
			_ = json.Unmarshal(m.Params, &p)
			prompts.Add(1)
			go func() {
				defer prompts.Done()
				fakePrompt(c, m.ID, p)
			}()
		case "session/cancel":
			select {
			case c.cancel <- struct{}{}:
			default:
			}
		case "":
			c.mu.Lock()
			ch := c.waiters[string(agent.CompactJSON(m.ID))]
			c.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
		return true
	})
	prompts.Wait()
	if os.Getenv(envStay) == "1" {
		select {}
	}
	return 0
}

func fakePrompt(c *fakeConn, id json.RawMessage, p promptParams) {
	text := p.Prompt[len(p.Prompt)-1].Text
	end := func(reason string) { c.result(id, map[string]any{"stopReason": reason}) }
	switch {
	case text == "text":
		c.update(chunk("agent_thought_chunk", "thinking..."))
		u := chunk("agent_message_chunk", "Hel")
		u["messageId"] = "m1"
		c.update(u)
		u = chunk("agent_message_chunk", "lo")
		u["messageId"] = "m1"
		c.update(u)
		c.update(map[string]any{"sessionUpdate": "plan", "entries": []any{map[string]any{"content": "step one", "status": "completed"}, map[string]any{"content": "step two", "status": "pending"}}})
		c.update(map[string]any{"sessionUpdate": "usage_update", "used": 50, "size": 1000, "cost": map[string]any{"amount": 0.25, "currency": "USD"}})
		c.update(map[string]any{"sessionUpdate": "brand_new_update", "x": 1})
		c.result(id, map[string]any{"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}})
	case text == "tool":
		c.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "bash", "kind": "execute", "status": "pending", "rawInput": map[string]any{}})
		in := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "ls -la", "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": "ls -la"}}
		c.update(in)
		out := func(s string) []any {
			return []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": s}}}
		}
		c.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress", "content": out("out1")})
		c.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress", "content": out("out1out2")})
		c.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": out("out1out2")})
		c.update(chunk("agent_message_chunk", "done"))
		end("end_turn")
	case text == "perm", text == "perm-cancel":
		c.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "rm -rf build", "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": "rm -rf build"}})
		answer := c.call(0, "session/request_permission", map[string]any{
			"sessionId": fakeSession,
			"toolCall":  map[string]any{"toolCallId": "t1", "title": "rm -rf build", "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": "rm -rf build", "cwd": c.cwd}},
			"options": []any{
				map[string]any{"optionId": "once", "kind": "allow_once", "name": "Allow once"},
				map[string]any{"optionId": "always", "kind": "allow_always", "name": "Always allow"},
				map[string]any{"optionId": "reject", "kind": "reject_once", "name": "Reject"},
			},
		})
		var got []byte
		select {
		case got = <-answer:
		case <-c.cancel:
			got = <-answer // the client must still answer: cancelled
			c.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed", "content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "aborted"}}}})
			end("cancelled")
			return
		}
		var r struct {
			Result permissionOutcome `json:"result"`
		}
		_ = json.Unmarshal(got, &r)
		status, msg := "completed", "ran with "+r.Result.Outcome.OptionID
		if r.Result.Outcome.Outcome != "selected" || r.Result.Outcome.OptionID == "reject" {
			status, msg = "failed", "rejected"
		}
		c.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": status, "content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": msg}}}})
		if r.Result.Outcome.Outcome == "cancelled" {
			if c.cancelled(2 * time.Second) {
				end("cancelled")
				return
			}
		}
		c.update(chunk("agent_message_chunk", "after: "+msg))
		end("end_turn")
	case text == "ids":
		// Two requests whose ids differ only in type: answers must keep them.
		opts := []any{map[string]any{"optionId": "y", "kind": "allow_once", "name": "Yes"}, map[string]any{"optionId": "n", "kind": "reject_once", "name": "No"}}
		a := c.call(7, "session/request_permission", map[string]any{"sessionId": fakeSession, "toolCall": map[string]any{"toolCallId": "a", "title": "A"}, "options": opts})
		b := c.call("7", "session/request_permission", map[string]any{"sessionId": fakeSession, "toolCall": map[string]any{"toolCallId": "b", "title": "B"}, "options": opts})
		<-a
		<-b
		end("end_turn")
	case text == "dup":
		opts := []any{map[string]any{"optionId": "y", "kind": "allow_once", "name": "Yes"}}
		c.call(5, "session/request_permission", map[string]any{"sessionId": fakeSession, "toolCall": map[string]any{"toolCallId": "a"}, "options": opts})
		c.call(5, "session/request_permission", map[string]any{"sessionId": fakeSession, "toolCall": map[string]any{"toolCallId": "b"}, "options": opts})
		time.Sleep(time.Minute)
	case text == "slow" || text == "hang":
		if text == "hang" {
			providertest.IgnoreStop()
		}
		for i := range 500 {
			c.update(chunk("agent_message_chunk", fmt.Sprintf("w%03d ", i)))
			if c.cancelled(20*time.Millisecond) && text == "slow" {
				end("cancelled")
				return
			}
		}
		end("end_turn")
	case text == "error":
		c.fail(id, CodeInternalError, "Internal error", map[string]any{"details": "500 fake upstream failure"})
	case strings.HasPrefix(text, "stop:"):
		end(strings.TrimPrefix(text, "stop:"))
	case text == "crash":
		fmt.Fprintln(os.Stderr, "boom: the fake agent crashed")
		os.Exit(3)
	case text == "calls":
		w := c.call(0, "fs/write_text_file", map[string]any{"sessionId": fakeSession, "path": filepath.Join(c.cwd, "sub", "x.txt"), "content": "written\n"})
		<-w
		o := c.call(1, "fs/write_text_file", map[string]any{"sessionId": fakeSession, "path": "/etc/threadline-should-not-exist", "content": "x"})
		<-o
		r := c.call(2, "fs/read_text_file", map[string]any{"sessionId": fakeSession, "path": filepath.Join(c.cwd, "sub", "x.txt")})
		<-r
		t := c.call(3, "terminal/create", map[string]any{"sessionId": fakeSession, "command": "ls"})
		<-t
		x := c.call(4, "craft/drainMidTurnQueue", map[string]any{"sessionId": fakeSession})
		<-x
		c.send(map[string]any{"jsonrpc": "2.0", "method": "qwen/notify/session/mode-update", "params": map[string]any{"mode": "x"}})
		end("end_turn")
	case text == "late":
		c.update(chunk("agent_message_chunk", "on time"))
		end("end_turn")
		time.Sleep(20 * time.Millisecond)
		c.update(chunk("agent_message_chunk", "TOO LATE"))
		c.send(map[string]any{"jsonrpc": "2.0", "method": "qwen/notify/session/prompt-suggestion", "params": map[string]any{}})
	case text == "image":
		kinds := make([]string, 0, len(p.Prompt))
		for _, b := range p.Prompt {
			kinds = append(kinds, b.Type+":"+b.MimeType+":"+b.Data)
		}
		c.update(chunk("agent_message_chunk", strings.Join(kinds, ",")))
		end("end_turn")
	default:
		c.update(chunk("agent_message_chunk", "echo: "+text))
		end("end_turn")
	}
}
