// grok-cli (@vibe-kit/grok-cli) `grok --prompt P` JSON lines → agent.Events.

package jsonstream

import (
	"encoding/json"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// GrokCLIProviderID is the grok-cli provider's id ("grok" is x.ai's Grok
// Build, a different CLI with the same executable name).
const GrokCLIProviderID agent.ProviderID = "grok-cli"

// grokCLIErrorPrefix starts the assistant message grok-cli prints, with exit
// status 0, when the model call failed (its agent's catch-all).
const grokCLIErrorPrefix = "Sorry, I encountered an error: "

// GrokCLIParser parses grok-cli's headless output: after the turn it prints
// the turn's messages in OpenAI's shape, one per line (the user's, each
// assistant message with its tool_calls, each tool result, the final
// assistant message). The final message is held back until the exit is known
// (Finish): grok-cli reports a failed model call as an assistant message and
// exit status 0. Use NewGrokCLIParser.
type GrokCLIParser struct {
	chat Chat
	// final is the last assistant message without tool calls, not yet shown.
	final    string
	hasFinal bool
}

// NewGrokCLIParser returns a parser for one run. grok-cli keeps no session.
func NewGrokCLIParser() *GrokCLIParser {
	p := &GrokCLIParser{}
	p.chat = NewChat(GrokCLIProviderID, p)
	return p
}

// Parse implements procrun.LineParser.
func (p *GrokCLIParser) Parse(line []byte) ([]agent.Event, error) { return p.chat.Parse(line) }

// ToolText implements ChatDialect: a tool's output is its content's text.
func (p *GrokCLIParser) ToolText(content json.RawMessage) string { return rawText(content) }

// Other implements ChatDialect: grok-cli prints messages only.
func (p *GrokCLIParser) Other(*ChatMessage, []byte) ([]agent.Event, bool) { return nil, false }

// Assistant implements ChatDialect: the text and tool calls of each message,
// the last one without tool calls held back for Finish.
func (p *GrokCLIParser) Assistant(m *ChatMessage) []agent.Event {
	var out []agent.Event
	if p.hasFinal { // a message after the held one: the held one was not the last
		out = p.chat.AppendText(out, p.final)
		p.final, p.hasFinal = "", false
	}
	text := rawText(m.Content)
	if len(m.ToolCalls) == 0 {
		p.final, p.hasFinal = text, true
		return out
	}
	return p.chat.AppendCalls(p.chat.AppendText(out, text), "assistant/tool_calls", m)
}

// Finish ends the turn once grok-cli exited (exited reports a non-zero
// exit): the final assistant message becomes the answer and run.completed,
// or the failure text (its error message, or "Error: …" printed before a
// non-zero exit). Without a final message it returns nothing: the run fails
// as one without a result.
func (p *GrokCLIParser) Finish(exited bool) []agent.Event {
	if !p.hasFinal {
		return nil
	}
	final := p.final
	p.final, p.hasFinal = "", false
	if msg, ok := strings.CutPrefix(final, grokCLIErrorPrefix); ok || exited {
		if !ok {
			msg = final
		}
		return []agent.Event{{Type: agent.EventRunFailed, Text: "grok-cli: " + strings.TrimSpace(msg)}}
	}
	return append(p.chat.AppendText(nil, final), agent.Event{Type: agent.EventRunCompleted})
}
