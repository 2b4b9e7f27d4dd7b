// The single-pass decoder against encoding/json: same records, same
// verdicts, same events.

package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// sameRecord fails t unless the decoder gives what json.Unmarshal gives for
// line.
func sameRecord(t *testing.T, d *decoder, line []byte) {
	t.Helper()
	jsonscantest.Same(t, line, d.decode, func(r *record) {
		if r.hasMsg {
			var m message
			if err := json.Unmarshal(r.Message, &m); err != nil || !reflect.DeepEqual(m, r.msg) {
				t.Fatalf("%q: msg %+v, json.Unmarshal of the message %+v (%v)", line, r.msg, m, err)
			}
		}
		r.msg, r.hasMsg = message{}, false
	})
}

// decoderCases are lines the fast path must decode as encoding/json does or
// hand over to it: keys it would fold or unescape, types that do not fit,
// null, duplicates (jsonscantest.SyntaxCases has the invalid JSON).
var decoderCases = []string{
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hi \"there\"\n\u00e9\ud83d\ude00 \ud800 x\udc00 \/","partial":{"role":"assistant"}},"message":{"role":"assistant","content":[]}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"bad utf8 \xff\xfe ok é"}}`,
	`{"type":"message_update","assistantMessageEvent":null}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"a"},"assistantMessageEvent":{"delta":"merged"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":null}}`,
	`{"type":"message_update","assistantMessageEvent":{"Type":"text_delta","DELTA":"x"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":5}}`,
	`{"type":"message_update","assistantMessageEvent":[]}`,
	`{"Type":"agent_start"}`, `{"TYPE":"agent_start","type":"turn_start"}`, `{"typ\u0065":"agent_start"}`,
	`{"toolcallid":"x","type":"tool_execution_start"}`, `{"type":"tool_execution_start","ToolName":"bash"}`,
	`{"ſuccess":true}`, `{"type":5}`, `{"type":null,"id":null,"message":null,"data":null,"args":null}`,
	`{"type":"response","id":"req-1","command":"get_state","success":true,"data":{"sessionId":"s","model":{"id":"m","provider":"p"}}}`,
	`{"type":"response","id":7,"command":"prompt","success":false,"error":"busy"}`,
	`{"type":"response","success":"true"}`, `{"type":"response","success":1}`, `{"type":"response","success":null}`,
	`{"type":"tool_execution_update","toolCallId":"c","toolName":"bash","args":{"command":"ls"},"partialResult":{"content":[{"type":"text","text":"a"}]}}`,
	`{"type":"tool_execution_end","toolCallId":"c","result":{"content":"x"},"isError":true}`,
	`{"type":"tool_execution_end","toolCallId":"c","result":null,"partialResult":5}`,
	`{"type":"tool_execution_end","isError":"no"}`,
	`{"type":"agent_end","messages":[{"role":"assistant","content":"hi","stopReason":"stop","usage":{"input":1,"output":2,"cost":{"total":0.5}}}]}`,
	`{"type":"agent_end","messages":{"role":"assistant"}}`, `{"type":"agent_end","messages":null}`,
	`{"type":"agent_end","messages":[]}`, `{"type":"agent_end","messages":[null,{"role":"user"},{"Role":"x"}]}`,
	`{"type":"agent_end","messages":[{"role":"assistant","stopReason":"stop"}],"messages":[{"content":"merged?"}]}`,
	`{"type":"agent_end","messages":[],"messages":null}`, `{"type":"agent_end","messages":[5]}`,
	`{"type":"agent_end","messages":[{"role":"assistant","usage":{"input":"x"}}]}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input":3},"stopReason":"stop"}}`,
	`{"message":{"role":"assistant"},"type":"message_end"}`, `{"type":"message_end","message":"text"}`,
	`{"type":"message_end","message":{"role":5}}`, `{"type":"message_end","message":{"role":"a"},"message":{"model":"m"}}`,
	`{"type":"message_start","message":null}`, `{"type":"message_start","message":{"ROLE":"assistant"}}`,
	`{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000.5,"errorMessage":"overloaded"}`,
	`{"type":"auto_retry_start","attempt":1.5}`, `{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"gave up"}`,
	`{"type":"extension_ui_request","id":"d1","method":"select","title":"Pick","options":["a","b"],"placeholder":"p","prefill":"x"}`,
	`{"type":"extension_ui_request","id":"d1","method":"confirm","title":"Sure?","message":"really"}`,
	`{"type":"extension_ui_request","options":"a"}`, `{"type":"compaction_start","reason":"threshold"}`,
}

// captureLines are the pi → client lines of the testdata transcripts,
// compact as pi writes them, then as captured.
func captureLines(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range providertest.Inputs(t, filepath.Join("testdata", "*.jsonl")) {
		for _, m := range providertest.Messages(t, f, "recv") {
			var buf bytes.Buffer
			if err := json.Compact(&buf, m); err != nil {
				t.Fatal(err)
			}
			out = append(out, buf.Bytes(), m)
		}
	}
	return out
}

func TestDecoderMatchesEncodingJSON(t *testing.T) {
	d := &decoder{}
	for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
		sameRecord(t, d, []byte(c))
	}
	deep := bytes.Repeat([]byte(`{"a":`), jsonscan.MaxDepth)
	sameRecord(t, d, append(append(deep, '1'), bytes.Repeat([]byte("}"), jsonscan.MaxDepth)...))
	arr := append([]byte(`{"a":`), bytes.Repeat([]byte("["), jsonscan.MaxDepth-1)...)
	sameRecord(t, d, append(arr, append(bytes.Repeat([]byte("]"), jsonscan.MaxDepth-1), '}')...))
}

// TestDecoderFastPathOnCaptures: every line of the real pi captures decodes
// without encoding/json's help, to the same record.
func TestDecoderFastPathOnCaptures(t *testing.T) {
	d := &decoder{}
	lines := captureLines(t)
	for _, l := range lines {
		var r record
		if err := d.fast(l, &r); err != nil {
			t.Errorf("fast path refused %s: %v", l, err)
		}
		sameRecord(t, d, l)
	}
	if len(lines) < 100 {
		t.Fatalf("only %d capture lines", len(lines))
	}
}

// outcome renders what Parse gave for a line, and what the parser queued.
func outcome(p *Parser, line []byte) string {
	evs, err := p.Parse(line)
	b, _ := json.Marshal(evs)
	out, _ := json.Marshal(p.TakeOutgoing())
	return fmt.Sprintf("%s %v %s", b, err, out)
}

// TestParseMatchesEncodingJSON: the capture lines and the edge cases, fed
// in order to a parser decoding with the fast path and to one decoding
// with json.Unmarshal alone, give the same events, errors and answers.
func TestParseMatchesEncodingJSON(t *testing.T) {
	fast, std := NewParser(""), NewParser("")
	std.dec.stdOnly = true
	fast.StartTurn("req-2")
	std.StartTurn("req-2")
	lines := captureLines(t)
	for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
		lines = append(lines, []byte(c))
	}
	for _, l := range lines {
		if got, want := outcome(fast, l), outcome(std, l); got != want {
			t.Errorf("line %s:\nfast %s\nstd  %s", l, got, want)
		}
	}
}

// TestEventsDoNotAliasLine: the events Parse returns stay the same when the
// line's buffer is overwritten afterwards, as the run's reader reuses it
// (the fast path leaves raw slices of the line in the record), and so does
// what the parser keeps (tools, dialogs, the pending failure).
func TestEventsDoNotAliasLine(t *testing.T) {
	p := NewParser("")
	p.StartTurn("req-2")
	var kept []string
	var got [][]agent.Event
	for _, l := range captureLines(t) {
		buf := bytes.Clone(l)
		evs, _ := p.Parse(buf)
		b, _ := json.Marshal(evs)
		kept, got = append(kept, string(b)), append(got, evs)
		for i := range buf {
			buf[i] = 'x'
		}
	}
	for i, evs := range got {
		if b, _ := json.Marshal(evs); string(b) != kept[i] {
			t.Fatalf("events changed with the line's buffer:\nwas %s\nnow %s", kept[i], b)
		}
	}
	b, _ := json.Marshal(append(p.Settle(), p.EndPending()...))
	if bytes.Contains(b, []byte("xxxx")) {
		t.Fatalf("parser state aliases a line: %s", b)
	}
}

func FuzzDecoder(f *testing.F) {
	for _, l := range captureLines(f) {
		f.Add(l)
	}
	for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sameRecord(t, &decoder{}, line)
		fast, std := NewParser(""), NewParser("")
		std.dec.stdOnly = true
		for range 2 {
			if got, want := outcome(fast, line), outcome(std, line); got != want {
				t.Fatalf("line %q:\nfast %s\nstd  %s", line, got, want)
			}
		}
	})
}
