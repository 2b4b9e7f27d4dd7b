// Answer: the Respond and flush of a Wire whose sans-IO parser queues the
// lines it wants written (claude, pi, acp).

package procrun

import "github.com/threadline-bot/threadline/agentcore/agent"

// Outgoing is a parser that queues stdin lines (control responses, answers,
// requests) for its wire to write.
type Outgoing interface {
	TakeOutgoing() [][]byte
}

// Answerer is a parser that turns a user's answer into its resolution event
// and the lines to write (queued, see Outgoing).
type Answerer interface {
	Outgoing
	Respond(resp agent.InteractionResponse) (agent.Event, error)
}

// Flush writes the lines p queued, in order.
func (c *Conn) Flush(p Outgoing) {
	for _, l := range p.TakeOutgoing() {
		c.Write(l)
	}
}

// FlushEmit writes the lines p queued, then emits evs: what a parser made of
// one line (its answers to what the line asked go out first).
func (c *Conn) FlushEmit(p Outgoing, evs []agent.Event) {
	c.Flush(p)
	for _, ev := range evs {
		c.Emit(ev)
	}
}

// Answer is Wire.Respond for a parser that answers: p resolves resp, the
// lines it queued are written and its resolution is emitted. An error from
// p (an unknown or malformed answer) is returned and nothing is written.
func (c *Conn) Answer(p Answerer, resp agent.InteractionResponse) error {
	ev, err := p.Respond(resp)
	if err != nil {
		return err
	}
	c.Flush(p)
	c.Emit(ev)
	return nil
}

// Queue holds the lines a sans-IO parser wants written to the CLI's stdin,
// in order, until its wire takes them (Outgoing.TakeOutgoing).
type Queue struct{ lines [][]byte }

// Push queues line.
func (q *Queue) Push(line []byte) { q.lines = append(q.lines, line) }

// Take returns the queued lines and empties the queue.
func (q *Queue) Take() [][]byte {
	out := q.lines
	q.lines = nil
	return out
}
