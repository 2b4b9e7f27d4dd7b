// The single-pass decoder against encoding/json: same messages, same
// verdicts, same events.

package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
)

// withoutBlock checks the content block the fast path decoded against what
// json.Unmarshal of the content gives, then clears it for comparing with a
// message encoding/json decoded.
func withoutBlock(t *testing.T, line []byte, u *sessionUpdate) {
	t.Helper()
	if u == nil {
		return
	}
	if u.hasBlock {
		var c ContentBlock
		if err := json.Unmarshal(u.Content, &c); err != nil || c != u.block {
			t.Fatalf("%q: block %+v, json.Unmarshal of the content %+v (%v)", line, u.block, c, err)
		}
	}
	u.block, u.hasBlock = ContentBlock{}, false
}

// sameMessage fails t unless the decoder gives what json.Unmarshal gives
// for line (the content blocks it decoded checked, then cleared).
func sameMessage(t *testing.T, d *decoder, line []byte) {
	t.Helper()
	jsonscantest.Same(t, line, d.decode, func(m *inMessage) {
		withoutBlock(t, line, m.Params.Update)
		withoutBlock(t, line, m.Params.ToolCall)
	})
}

// decoderCases are lines the fast path must decode as encoding/json does or
// hand over to it: keys it would fold or unescape, types that do not fit,
// null, duplicates (jsonscantest.SyntaxCases has the invalid JSON).
var decoderCases = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi \"there\"\n\u00e9\ud83d\ude00 \ud800 x\udc00 \/","annotations":{"a":[1]}}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"bad utf8 \xff\xfe ok é"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"a"},"content":[{"type":"content"}]}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":[1],"content":{"type":"text","text":"last"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"Type":"text","TEXT":"x"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","mimetype":"x"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":null,"messageId":null}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":"text"}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","_meta":{"usage":{"inputTokens":3,"outputTokens":4}},"content":{"type":"text","text":"x"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","_meta":{"usage":"none"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","_meta":{"toolName":"a","durationMs":5,"usage":null,"x":[{}]},"_meta":{"toolName":"b"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","_meta":{"ToolName":"a"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","_meta":{"durationMs":1.5}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","_meta":null}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","_meta":[]}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"bash","kind":"execute","status":"pending","rawInput":{"command":"ls"},"locations":[{"path":"/x","line":3}]}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"c","title":null,"status":"completed","content":[{"type":"content","content":{"type":"text","text":"out"}}],"rawOutput":{"output":"o"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","title":"a","title":"b"}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","title":5}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[{"content":"a","status":"completed","priority":"high"}]}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"usage_update","used":1.5}}}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"notice","severity":"warning","title":"T","description":"d"}}}`,
	`{"method":"session/update","params":{"update":null}}`, `{"method":"session/update","params":null}`,
	`{"method":"session/update","params":[1]}`, `{"method":"session/update","params":"x"}`, `{"method":"session/update"}`,
	`{"method":"session/update","params":{"update":{"sessionUpdate":"a"},"update":{"toolCallId":"merged"}}}`,
	`{"method":"session/update","params":{"sessionid":"s"}}`, `{"method":"session/update","params":{"Update":{}}}`,
	`{"method":"session/update","params":{"update":{"sessionupdate":"agent_message_chunk"}}}`,
	`{"method":"session/update","params":{"update":{"ToolCallId":"c"}}}`,
	`{"method":"session/update","params":{"update":{"_META":{}}}}`,
	`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c","title":"rm","kind":"delete","content":[{"type":"diff","path":"/a","oldText":"x","newText":"y"}]},"options":[{"optionId":"o","name":"Allow","kind":"allow_once"}]}}`,
	`{"id":"p","method":"session/request_permission","params":{"toolCall":null,"options":{"optionId":"o"}}}`,
	`{"id":1,"method":"fs/read_text_file","params":{"path":"/a","line":2,"limit":3}}`,
	`{"id":1,"method":"fs/read_text_file","params":{"path":"/a","line":"2"}}`,
	`{"id":2,"method":"fs/write_text_file","params":{"path":"/a","content":"x\ny"}}`,
	`{"method":"$/cancel_request","params":{"requestId":7}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`,
	`{"id":3,"result":null}`, `{"id":3,"error":null}`, `{"id":null,"result":{}}`,
	`{"id":2,"error":{"code":-32002,"message":"not found","data":{"details":"gone"}}}`,
	`{"id":2,"error":{"code":"x"}}`, `{"id":2,"error":"boom"}`, `{"id":2,"result":{},"error":{"code":1}}`,
	`{"ID":2,"result":{}}`, `{"Method":"session/update"}`, `{"meth\u006fd":"x"}`, `{"method":7}`, `{"method":null}`,
	`{"ſession":1}`,
}

func TestDecoderMatchesEncodingJSON(t *testing.T) {
	d := &decoder{}
	for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
		sameMessage(t, d, []byte(c))
	}
	deep := bytes.Repeat([]byte(`{"a":`), jsonscan.MaxDepth)
	sameMessage(t, d, append(append(deep, '1'), bytes.Repeat([]byte("}"), jsonscan.MaxDepth)...))
	arr := append([]byte(`{"params":{"update":{"content":`), bytes.Repeat([]byte("["), jsonscan.MaxDepth-3)...)
	sameMessage(t, d, append(arr, append(bytes.Repeat([]byte("]"), jsonscan.MaxDepth-3), "}}}"...)...))
	arr = append([]byte(`{"params":{"update":{"content":`), bytes.Repeat([]byte("["), jsonscan.MaxDepth-2)...)
	sameMessage(t, d, append(arr, append(bytes.Repeat([]byte("]"), jsonscan.MaxDepth-2), "}}}"...)...))
}

// TestDecoderFastPathOnCaptures: every agent line of the real opencode,
// qwen and gemini captures decodes without encoding/json's help, to the
// same message.
func TestDecoderFastPathOnCaptures(t *testing.T) {
	d := &decoder{}
	n := 0
	for _, run := range referenceUnit(t, 1) {
		for _, s := range run.steps {
			if s.line == nil {
				continue
			}
			n++
			var m inMessage
			if err := d.fast(s.line, &m); err != nil {
				t.Errorf("fast path refused %s: %v", s.line, err)
			}
			sameMessage(t, d, s.line)
		}
	}
	if n < 300 {
		t.Fatalf("only %d capture lines", n)
	}
}

// lineOutcome renders what Parse gave for a line, and what the parser queued.
func lineOutcome(p *Parser, line []byte) string {
	parsed, err := p.Parse(line)
	b, _ := json.Marshal(parsed)
	out, _ := json.Marshal(p.TakeOutgoing())
	return fmt.Sprintf("%s %v %s", b, err, out)
}

// newPair returns a parser decoding with the fast path and one decoding
// with json.Unmarshal alone, with the same options.
func newPair(def Definition) (fast, std *Parser) {
	opts := func() ParserOptions {
		return ParserOptions{Provider: def.ID, EmitSession: def.Resume, HoldReplay: def.LoadQuiet > 0,
			SessionNotFound: def.SessionNotFound, FS: &memFS{}}
	}
	fast, std = NewParser(opts()), NewParser(opts())
	std.dec.stdOnly = true
	return fast, std
}

// TestParseMatchesEncodingJSON: each capture replayed (requests tracked,
// cancels applied) into both parsers of a pair gives the same events,
// replies, errors and answers line by line, and so do the edge cases after
// it.
func TestParseMatchesEncodingJSON(t *testing.T) {
	for _, run := range referenceUnit(t, 1) {
		fast, std := newPair(run.def)
		for _, s := range run.steps {
			switch {
			case s.line != nil:
				if got, want := lineOutcome(fast, s.line), lineOutcome(std, s.line); got != want {
					t.Errorf("line %s:\nfast %s\nstd  %s", s.line, got, want)
				}
			case s.cancel:
				fast.Cancel()
				std.Cancel()
			default:
				fast.Track(s.id, s.method)
				std.Track(s.id, s.method)
			}
		}
		for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
			if got, want := lineOutcome(fast, []byte(c)), lineOutcome(std, []byte(c)); got != want {
				t.Errorf("line %s:\nfast %s\nstd  %s", c, got, want)
			}
		}
	}
}

// TestParsedDoesNotAliasLine: what Parse returns (events, reply) and what
// the parser keeps stays the same when the line's buffer is overwritten
// afterwards, as the run's reader reuses it (the fast path leaves raw
// slices of the line in the message).
func TestParsedDoesNotAliasLine(t *testing.T) {
	for _, run := range referenceUnit(t, 1) {
		p, _ := newPair(run.def)
		var kept []string
		var parsed []Parsed
		for _, s := range run.steps {
			switch {
			case s.line != nil:
				buf := bytes.Clone(s.line)
				got, _ := p.Parse(buf)
				b, _ := json.Marshal(got)
				kept, parsed = append(kept, string(b)), append(parsed, got)
				for i := range buf {
					buf[i] = 'x'
				}
			case s.cancel:
				p.Cancel()
			default:
				p.Track(s.id, s.method)
			}
		}
		for i, got := range parsed {
			if b, _ := json.Marshal(got); string(b) != kept[i] {
				t.Fatalf("%s: parsed changed with the line's buffer:\nwas %s\nnow %s", run.def.ID, kept[i], b)
			}
		}
		if evs := p.EndTurn(); len(evs) > 0 {
			b, _ := json.Marshal(evs)
			if bytes.Contains(b, []byte("xxxx")) {
				t.Fatalf("%s: parser state aliases a line: %s", run.def.ID, b)
			}
		}
	}
}

func FuzzDecoder(f *testing.F) {
	for _, run := range referenceUnit(f, 1) {
		for _, s := range run.steps {
			if s.line != nil {
				f.Add(s.line)
			}
		}
	}
	for _, c := range slices.Concat(decoderCases, jsonscantest.SyntaxCases) {
		f.Add([]byte(c))
	}
	def, _ := lookup("opencode")
	f.Fuzz(func(t *testing.T, line []byte) {
		sameMessage(t, &decoder{}, line)
		fast, std := newPair(def)
		for _, p := range []*Parser{fast, std} {
			for _, m := range []string{"initialize", "session/new", "session/prompt"} {
				p.Request(m, nil)
			}
		}
		for range 2 {
			if got, want := lineOutcome(fast, line), lineOutcome(std, line); got != want {
				t.Fatalf("line %q:\nfast %s\nstd  %s", line, got, want)
			}
		}
	})
}
