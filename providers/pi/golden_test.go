// Golden tests: real pi 0.73.1 transcripts → normalized events.

package pi

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// command is what a command the driver sent is to a replay (render and
// BenchmarkParseReference): a prompt starts a turn, an abort interrupts it.
type command struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// sentCommand reads the driver's command (the zero command, which apply
// ignores, when it is not one).
func sentCommand(msg json.RawMessage) command {
	var c command
	_ = json.Unmarshal(msg, &c)
	return c
}

// apply tells p what the driver sent: its prompt starts a turn when none is
// running, its abort sets Interrupting.
func (c command) apply(p *Parser) {
	switch {
	case c.Type == "prompt" && !p.Active():
		p.StartTurn(c.ID)
	case c.Type == "abort":
		p.Interrupting = true
	}
}

// render replays a transcript through a fresh parser: the driver's prompt
// starts a turn (when none is running), its abort sets Interrupting, every
// pi line is parsed, and a failed agent_end that no auto_retry_start follows
// within DefaultRetryGrace on the captured timeline is settled.
func render(t testing.TB, lines []providertest.TranscriptLine) []byte {
	t.Helper()
	r := providertest.NewRecorder(t)
	p := NewParser("")
	events := func(evs []agent.Event) {
		r.Events(evs)
		r.Stdin(p.TakeOutgoing())
	}
	pendingSince := -1.0
	for _, l := range lines {
		switch l.Dir {
		case "send":
			sentCommand(l.Msg).apply(p)
		case "recv":
			if p.PendingFailure() && l.T-pendingSince > DefaultRetryGrace.Seconds() {
				events(p.Settle())
			}
			evs, err := p.Parse(l.Msg)
			r.Error("parse_error", err)
			events(evs)
			if p.PendingFailure() && pendingSince < 0 {
				pendingSince = l.T
			} else if !p.PendingFailure() {
				pendingSince = -1
			}
		}
	}
	events(p.Settle())
	return r.Bytes()
}

func TestGolden(t *testing.T) {
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return render(t, providertest.ReadTranscript(t, in))
	})
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"pi-basic.jsonl", "pi-write.jsonl", "pi-http500.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := providertest.Messages(b, filepath.Join("testdata", name), "recv")
			providertest.BenchLines(b, lines, func() {
				p := NewParser("")
				p.StartTurn("req-1")
				for _, l := range lines {
					if _, err := p.Parse(l); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
