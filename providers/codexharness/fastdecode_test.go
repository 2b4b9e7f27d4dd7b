// The single-pass decoder against encoding/json: same notifLines, same
// messages, events, errors and replies, and the stream's notifications on
// the fast path.

package codexharness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// fastOrStd is fastNotif with json.Unmarshal when it gives up: what
// decodeLine reads a line as.
func fastOrStd(line []byte, n *notifLine) error {
	var d notifDec
	if err := fastNotif(line, &d); err == nil {
		*n = d.line()
		return nil
	} else if err != jsonscan.ErrSlow {
		return fmt.Errorf("fastNotif: %w, not ErrSlow", err)
	}
	return json.Unmarshal(line, n)
}

// fastCases are lines the fast path must decode as encoding/json does or
// hand over to it: keys it would fold or unescape, types that do not fit,
// null, duplicates, numbers an int does not take (jsonscantest.SyntaxCases
// has the invalid JSON).
var fastCases = []string{
	`{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"hi \"there\"\n\u00e9\ud83d\ude00 \ud800 x\udc00 \/"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"i","delta":"bad utf8 \xff\xfe ok é"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"i","delta":null,"threadId":null}}`,
	`{"method":"item/agentMessage/delta","params":{"ItemId":"i","delta":"x"}}`,
	`{"method":"item/agentMessage/delta","params":{"item\u0049d":"i","delta":"x"}}`,
	`{"method":"item/agentMessage/delta","params":{"itemid":"i","delta":"x","DELTA":"y"}}`,
	`{"method":"item/agentMessage/delta","params":{"ſummary":"x"}}`,
	`{"Method":"item/agentMessage/delta","params":{"delta":"x"}}`,
	`{"method":"item/agentMessage/delta","PARAMS":{"delta":"x"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a"},"params":{"itemId":"b"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a"},"params":null,"params":{"itemId":"b"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a"},"params":null}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a","turn":{"id":"t"}},"params":{"delta":"b"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a"},"params":{"turn":{"id":"t"}}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a"},"params":5}`,
	`{"method":"item/agentMessage/delta","params":[]}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a","delta":"b\n","itemId":"","turnId":"u"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a\n","delta":"b","threadId":"t\u0000"}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a","delta":null,"itemId":"i","itemId":null}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"","itemId":"","threadId":"","turnId":""}}`,
	`{"method":"item/agentMessage/delta","params":{"delta":"a","itemId":"i","turn":{"id":"t"},"threadId":"x","delta":"b"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"d","summaryIndex":1,"message":"m"}}`,
	`{"method":"item/agentMessage/delta","params":"x"}`,
	`{"method":null,"params":{}}`, `{"method":5,"params":{}}`, `{"params":{}}`, `{"method":"m"}`,
	`{"method":"m","params":{},"id":null}`, `{"method":"m","params":{},"id":7}`, `{"method":"m","params":{},"ID":"x"}`,
	`{"jsonrpc":"2.0","method":"m","params":{"unknown":[1,{"a":null}],"emittedAtMs":17}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":2}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":-0}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":1.0}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":1e2}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":99999999999999999999}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":9223372036854775807}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":"1"}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":null}}`,
	`{"method":"item/reasoning/summaryPartAdded","params":{"itemId":"r","summaryIndex":true}}`,
	`{"method":"item/started","params":{"threadId":"t","item":{"type":"commandExecution","id":"c","command":"ls","cwd":"/","commandActions":[{"type":"list","command":"ls"}],"aggregatedOutput":null,"exitCode":null,"status":"inProgress"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"c","aggregatedOutput":"out\n","exitCode":2,"status":"failed"},"threadId":"t","turnId":"u"}}`,
	`{"method":"item/completed","params":{"item":{"type":"commandExecution","exitCode":1.5}}}`,
	`{"method":"item/completed","params":{"item":{"type":"a","text":"x"},"item":{"id":"i"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"a","text":"x"},"item":null}}`,
	`{"method":"item/completed","params":{"item":"x"}}`, `{"method":"item/completed","params":{"item":[]}}`,
	`{"method":"item/completed","params":{"item":{"Type":"agentMessage"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"agentMessage","TEXT":"x","text":"y"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"reasoning","summary":["a","b"],"content":["c"]}}}`,
	`{"method":"item/completed","params":{"item":{"type":"reasoning","summary":null,"content":null}}}`,
	`{"method":"item/completed","params":{"item":{"type":"reasoning","summary":[],"content":{"a":[1]}}}}`,
	`{"method":"item/completed","params":{"item":{"type":"reasoning","summary":[1]}}}`,
	`{"method":"item/completed","params":{"item":{"type":"fileChange","id":"f","changes":[{"path":"a","kind":{"type":"update","move_path":"b"},"diff":"d"}],"status":"completed"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"mcpToolCall","server":"s","tool":"t","arguments":{"a":1},"result":{"content":[{"type":"text","text":"r"}]},"error":{"message":"e"}}}}`,
	`{"method":"item/completed","params":{"item":{"type":"dynamicToolCall","namespace":null,"tool":"t","arguments":null,"contentItems":[{"type":"inputText","text":"x"}],"success":false}}}`,
	`{"method":"item/completed","params":{"item":{"type":"dynamicToolCall","namespace":"n","success":"no"}}}`,
	`{"method":"item/completed","params":{"item":{"type":"collabAgentToolCall","tool":"spawn","senderThreadId":"s","receiverThreadIds":["r"],"prompt":"p","model":null,"agentsStates":{"r":{"status":"running","message":null}}}}}`,
	`{"method":"item/completed","params":{"item":{"type":"webSearch","query":"q"},"threadId":"other"}}`,
	`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"completed","items":[],"durationMs":12,"error":null}}}`,
	`{"method":"turn/completed","params":{"turn":{"id":"u","status":"failed","items":null,"error":{"message":"boom","codexErrorInfo":{"x":1},"additionalDetails":"d"}}}}`,
	`{"method":"turn/completed","params":{"turn":{"items":[{"type":"agentMessage","id":"a","text":"hi"},5,null]},"turn":{"items":[{"b":1}]}}}`,
	`{"method":"turn/completed","params":{"turn":{"items":[1,]}}}`, `{"method":"turn/completed","params":{"turn":{"items":{}}}}`,
	`{"method":"turn/completed","params":{"turn":{"durationMs":1.5}}}`, `{"method":"turn/completed","params":{"turn":{"durationMs":null}}}`,
	`{"method":"turn/started","params":{"turn":{"id":"u","status":"inProgress"},"threadId":"t"}}`,
	`{"method":"thread/started","params":{"thread":{"id":"t","model":"gpt-5","extra":{}}}}`,
	`{"method":"thread/started","params":{"thread":{"id":5}}}`, `{"method":"thread/started","params":{"thread":null}}`,
	`{"method":"thread/tokenUsage/updated","params":{"turnId":"u","tokenUsage":{"total":{"totalTokens":3},"last":{"inputTokens":1,"outputTokens":2}}}}`,
	`{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"last":{"inputTokens":1.5}}}}`,
	`{"method":"error","params":{"error":{"message":"m","additionalDetails":null},"willRetry":true}}`,
	`{"method":"error","params":{"error":"m","willRetry":"yes"}}`, `{"method":"error","params":{"willRetry":null}}`,
	`{"method":"warning","params":{"summary":"s","details":"d"}}`, `{"method":"warning","params":{"details":null,"message":"m"}}`,
	`{"method":"warning","params":{"details":5}}`,
	`{"method":"turn/plan/updated","params":{"explanation":"e","plan":[{"step":"a","status":"completed"}]}}`,
	`{"method":"turn/plan/updated","params":{"plan":[{"step":"a","status":"x"}],"plan":[{"step":"b"}]}}`,
	`{"method":"model/rerouted","params":{"fromModel":"a","toModel":"b","reason":"r"}}`,
	`{"method":"serverRequest/resolved","params":{"threadId":"t","requestId":3}}`,
	`{"method":"serverRequest/resolved","params":{"requestId":"x"}}`, `{"method":"serverRequest/resolved","params":{"requestId":null}}`,
	`{"method":"mcpServer/startupStatus/updated","params":{"name":"x","status":"failed","error":"boom"}}`,
	` {"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"y"}} `,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x"}`,
	`{"method":"item/agentMessage/delta","params":{"itemId":"a","delta":"x"}}}`,
}

// capturedLines is every server line of the testdata transcripts and of
// the reference captures beside the repository when they are there.
func capturedLines(t testing.TB) [][]byte {
	files := transcripts(t)
	ref, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "reference", "codex-app-server", "transcripts", "*.jsonl"))
	for _, f := range ref {
		if filepath.Base(f) != "rollout-approve.jsonl" {
			files = append(files, f)
		}
	}
	var lines [][]byte
	for _, f := range files {
		lines = append(lines, serverLines(t, f)...)
	}
	if len(lines) == 0 {
		t.Fatal("no captured lines")
	}
	return lines
}

// TestFastNotifMatchesUnmarshal: fastNotif, with json.Unmarshal when it
// gives up, reads every captured line, the edge lines and the syntax cases
// as json.Unmarshal does.
func TestFastNotifMatchesUnmarshal(t *testing.T) {
	lines := capturedLines(t)
	for _, c := range slices.Concat(fastCases, edgeLines, jsonscantest.SyntaxCases) {
		lines = append(lines, []byte(c))
	}
	for _, l := range lines {
		jsonscantest.Same(t, l, fastOrStd, nil)
	}
}

// commonKinds are the notifications that make the stream: each captured
// line of these takes the fast path.
var commonKinds = []string{"item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta",
	"item/reasoning/textDelta", "item/reasoning/summaryPartAdded", "item/commandExecution/outputDelta",
	"item/fileChange/outputDelta", "item/started", "item/completed", "turn/started", "turn/completed",
	"turn/plan/updated", "turn/diff/updated", "thread/started", "thread/status/changed", "thread/tokenUsage/updated",
	"thread/settings/updated", "account/rateLimits/updated", "serverRequest/resolved", "error", "warning",
	"configWarning", "remoteControl/status/changed"}

// TestFastPathTaken: every captured notification line of the common kinds
// is decoded by fastNotif, and a delta's params stay in deltaParams (no
// union allocated); at least the deltas, items and turns are there.
func TestFastPathTaken(t *testing.T) {
	seen := map[string]int{}
	for _, l := range capturedLines(t) {
		m, err := jsonrpc.Decode(l)
		if err != nil || m.Kind != jsonrpc.KindNotification || !slices.Contains(commonKinds, m.Method) {
			continue
		}
		var d notifDec
		if err := fastNotif(l, &d); err != nil {
			t.Errorf("slow path (%v): %s", err, l)
			continue
		}
		if isDelta(l) && d.u != nil {
			t.Errorf("delta decoded into the union: %s", l)
		}
		seen[m.Method]++
	}
	for _, k := range []string{"item/agentMessage/delta", "item/started", "item/completed", "turn/started", "turn/completed", "thread/started", "thread/tokenUsage/updated"} {
		if seen[k] == 0 {
			t.Errorf("no captured %s line", k)
		}
	}
	var kinds []string
	for k, n := range seen {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("fast path: %v", kinds)
}

// pipeline is the run's handling of lines (as replay: the Parser, the
// interactions with a policy, the thread and turn results) over one
// decoder; each line's outcome is one string.
type pipeline struct {
	decode func([]byte) (jsonrpc.Message, params, error)
	p      *Parser
	in     *interactions
	policy agent.Decision
}

func newPipeline(decode func([]byte) (jsonrpc.Message, params, error), policy agent.Decision) *pipeline {
	return &pipeline{decode: decode, p: NewParser("p"), in: newInteractions("p", "Test"), policy: policy}
}

func (pl *pipeline) line(l []byte) string {
	m, ps, err := pl.decode(l)
	var u *notifParams
	switch {
	case ps.u != nil:
		u = ps.u
	case ps.light:
		u = liftDelta(&ps.d)
	}
	msg, _ := json.Marshal(struct {
		M   jsonrpc.Message
		U   *notifParams
		Raw json.RawMessage
	}{m, u, ps.raw})
	out := fmt.Sprintf("decode %s %v\n", msg, err)
	if err != nil {
		return out
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		var th threadResult
		if m.Error == nil && json.Unmarshal(m.Result, &th) == nil && th.Thread.ID != "" && pl.p.ThreadID() == "" {
			pl.p.SetThread(th.Thread.ID, th.Model)
		}
		var tr turnResult
		if m.Error == nil && json.Unmarshal(m.Result, &tr) == nil && tr.Turn.ID != "" && pl.p.TurnID() == "" {
			pl.p.SetTurn(tr.Turn.ID)
		}
	case jsonrpc.KindRequest:
		o, err := pl.in.request(&m, l, pl.p, pl.policy)
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range o.autoResolve {
				if !yield(id) {
					return
				}
			}
		})
		out += fmt.Sprintf("request %s replies %q interrupt %v auto %v err %v\n", lineOutcome(o.events, nil), o.lines, o.interrupt, ids, err)
	case jsonrpc.KindNotification:
		if m.Method == "serverRequest/resolved" {
			var v resolvedParams
			err := ps.decode(m.Method, &v)
			out += fmt.Sprintf("resolved %s %v\n", lineOutcome(pl.in.resolvedByServer(v.RequestID), nil), err)
			break
		}
		evs, err := pl.p.parse(m.Method, ps, l)
		out += "parse " + lineOutcome(evs, err)
	}
	return out
}

// sameOutcomes feeds lines to a pipeline over decodeLine and one over
// stdDecodeLine (encoding/json alone) and fails at the first line whose
// message, params, events, errors or replies differ.
func sameOutcomes(t *testing.T, lines [][]byte, policy agent.Decision) {
	t.Helper()
	fast, std := newPipeline(decodeLine, policy), newPipeline(stdDecodeLine, policy)
	for _, l := range lines {
		if got, want := fast.line(l), std.line(l); got != want {
			t.Fatalf("line %s:\nfast path     %s\nencoding/json %s", l, got, want)
		}
	}
}

// TestDecodeLineMatchesStd: every captured line, transcript by transcript,
// then the edge lines, give the same messages, params, events, errors and
// replies through decodeLine as through stdDecodeLine, asking the chat and
// with a policy that answers.
func TestDecodeLineMatchesStd(t *testing.T) {
	var edges [][]byte
	for _, c := range slices.Concat(fastCases, edgeLines, jsonscantest.SyntaxCases) {
		edges = append(edges, []byte(c))
	}
	for _, policy := range []agent.Decision{"", agent.DecisionApprove, agent.DecisionDecline} {
		for _, path := range transcripts(t) {
			sameOutcomes(t, serverLines(t, path), policy)
		}
		sameOutcomes(t, capturedLines(t), policy)
		sameOutcomes(t, edges, policy)
	}
}

func FuzzFastNotif(f *testing.F) {
	for _, l := range capturedLines(f) {
		f.Add(l)
	}
	for _, c := range slices.Concat(fastCases, edgeLines, jsonscantest.SyntaxCases) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		jsonscantest.Same(t, line, fastOrStd, nil)
		sameOutcomes(t, [][]byte{line, line}, "")
	})
}
