// The single-pass decoder against encoding/json: same records, same verdicts.

package claude

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
)

// sameAsEncodingJSON fails t unless decoder gives what json.Unmarshal gives
// for line: the same record, and an error exactly when it errs, with the
// same text.
func sameAsEncodingJSON(t *testing.T, d *decoder, line []byte) {
	t.Helper()
	jsonscantest.Same(t, line, d.decode, nil)
}

// decoderCases are lines the fast path must decode as encoding/json does or
// hand over to it: escapes and invalid UTF-8 in values, null and merged
// events, keys it would fold or unescape, types that do not fit, the rare
// typed fields, and invalid JSON around a decoded field
// (jsonscantest.SyntaxCases has the rest of the invalid JSON).
var decoderCases = []string{
	`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"there\"\n\u00e9\ud83d\ude00 \ud800 x\udc00 \/"}},"session_id":"s","api_message_id":"m"}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"bad utf8 \xff\xfe ok é"}}}`,
	`{"type":"stream_event","event":null}`,
	`{"type":"stream_event","event":{"type":"a"},"event":{"delta":{"text":"merged"}}}`,
	`{"type":"stream_event","event":{"type":"a","delta":null}}`,
	`{"Type":"result"}`,
	`{"TYPE":"result","type":"user"}`,
	`{"typ\u0065":"result"}`,
	`{"ſubtype":"x"}`,
	`{"event":{"Delta":{"TEXT":"x"}}}`,
	`{"type":5}`,
	`{"type":null,"subtype":null,"message":null,"request_id":null,"usage":null,"errors":null}`,
	`{"type":"result","is_error":true,"errors":["a","b"],"usage":{"input_tokens":3,"output_tokens":4},"total_cost_usd":1.5e-3,"duration_ms":12,"num_turns":2}`,
	`{"type":"result","num_turns":1.5}`,
	`{"type":"result","num_turns":"1"}`,
	`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}`,
	`{"type":"control_request","request_id":{"a":[1,2,{"b":null}]},"request":{"subtype":"can_use_tool","input":{"ünïcode":"\u0000"}}}`,
	`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"x"}]},"is_api_error_message":false}`,
	` 	{"type" : "x" , "unknown" : [ true , false , null , -0.5e+10 , 0 , {} , [] ] } 
`,
	`{"type":"x"}x`, `{"type":"x"}{}`, `{"type":"x",}`, `{"type"}`, `{"type":}`, `{"type":"x"}` + "\x00",
}

// allCases are decoderCases and the syntax cases every jsonscan decoder
// shares.
func allCases() []string { return slices.Concat(decoderCases, jsonscantest.SyntaxCases) }

func TestDecoderMatchesEncodingJSON(t *testing.T) {
	d := &decoder{}
	for _, c := range allCases() {
		sameAsEncodingJSON(t, d, []byte(c))
	}
	deep := bytes.Repeat([]byte(`{"a":`), jsonscan.MaxDepth) // one over the limit inside the record
	sameAsEncodingJSON(t, d, append(append(deep, '1'), bytes.Repeat([]byte("}"), jsonscan.MaxDepth)...))
	arr := append([]byte(`{"a":`), bytes.Repeat([]byte("["), jsonscan.MaxDepth-1)...)
	sameAsEncodingJSON(t, d, append(arr, append(bytes.Repeat([]byte("]"), jsonscan.MaxDepth-1), '}')...))
}

// TestDecoderFastPathOnCaptures: every stdout line of the real CLI captures
// decodes without encoding/json's help, to the same record.
func TestDecoderFastPathOnCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	n := 0
	for _, name := range files {
		if bytes.HasSuffix([]byte(name), []byte(".events.jsonl")) {
			continue
		}
		d := &decoder{}
		for _, line := range stdoutLines(t, name) {
			var r record
			if err := d.fast(line, &r); err != nil {
				t.Fatalf("%s: slow path for %q", name, line)
			}
			sameAsEncodingJSON(t, d, line)
			n++
		}
	}
	if n < 400 { // the goldens' inputs hold 426 stdout lines
		t.Fatalf("only %d captured lines", n)
	}
}

// FuzzDecoder: for any line the decoder and encoding/json agree.
func FuzzDecoder(f *testing.F) {
	for _, c := range allCases() {
		f.Add([]byte(c))
	}
	b, err := os.ReadFile(filepath.Join("testdata", "basic.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsEncodingJSON(t, &decoder{}, line)
	})
}
