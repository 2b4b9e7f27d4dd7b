// Answers typed at the prompt: approvals (y, a, n, s) and questions (an
// option's number or text, several numbers for a multiple choice, free text
// where the question takes it), a form's questions one at a time.

package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// errNotAnOption is a typed answer a question does not take.
var errNotAnOption = errors.New("not one of the options")

// Answer turns a typed line into a response to the interaction: y, a, n, s for
// approvals; for a question (its first), an option's number or text, or free
// text, and n to decline.
func Answer(in *agent.Interaction, text, by string) agent.InteractionResponse {
	resp := agent.InteractionResponse{InteractionID: in.ID, By: by}
	low := strings.ToLower(text)
	if in.Kind == agent.KindQuestion && len(in.Questions) > 0 {
		q := in.Questions[0]
		if declines(q, text) {
			resp.Decision = agent.DecisionDecline
			return resp
		}
		v, err := answerQuestion(q, text)
		if err != nil {
			v = text // the provider refuses it and the question stays open
		}
		resp.Decision, resp.Answers, resp.Secret = agent.DecisionAnswer, map[string]string{q.ID: v}, q.Secret
		return resp
	}
	switch low {
	case "y", "yes", "approve":
		resp.Decision = agent.DecisionApprove
	case "a", "always":
		resp.Decision = agent.DecisionApproveSession
	case "s", "stop":
		resp.Decision = agent.DecisionCancel
	default:
		resp.Decision = agent.DecisionDecline
	}
	return resp
}

// declines reports whether text declines the question: n or no, unless that
// is one of its options.
func declines(q agent.Question, text string) bool {
	low := strings.ToLower(strings.TrimSpace(text))
	if low != "n" && low != "no" {
		return false
	}
	_, err := option(q, text)
	return err != nil
}

// answerQuestion is the answer text to q is: an option by number or by its
// text; several, comma-separated, for a multiple choice (one per line in
// the answer); the text as typed where q has no options or allows others.
func answerQuestion(q agent.Question, text string) (string, error) {
	text = strings.TrimSpace(text)
	if len(q.Options) == 0 {
		return text, nil
	}
	if q.MultiSelect {
		var picked []string
		for part := range strings.SplitSeq(text, ",") {
			o, err := option(q, part)
			if err != nil {
				if q.AllowOther {
					return text, nil
				}
				return "", err
			}
			picked = append(picked, o)
		}
		return strings.Join(picked, "\n"), nil
	}
	o, err := option(q, text)
	if err != nil && q.AllowOther {
		return text, nil
	}
	return o, err
}

// option is the option text names: its number (from 1) or its text, any case.
func option(q agent.Question, text string) (string, error) {
	text = strings.TrimSpace(text)
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(q.Options) {
		return q.Options[n-1], nil
	}
	for _, o := range q.Options {
		if strings.EqualFold(o, text) {
			return o, nil
		}
	}
	return "", fmt.Errorf("%q is %w (1–%d)", text, errNotAnOption, len(q.Options))
}

// answer handles a line typed while an interaction waits: an approval's
// decision, or the answer to the form's next question (sent once all are
// answered).
func (s *session) answer(ctx context.Context, text string) {
	p := &s.pending[0]
	in := p.in
	if in.Kind != agent.KindQuestion || len(in.Questions) == 0 {
		s.respond(ctx, p.runID, Answer(in, text, s.By))
		return
	}
	if p.answers == nil {
		p.answers = map[string]string{}
	}
	q := in.Questions[len(p.answers)]
	resp := agent.InteractionResponse{InteractionID: in.ID, By: s.By}
	switch {
	case declines(q, text):
		resp.Decision = agent.DecisionDecline
		s.respond(ctx, p.runID, resp)
		return
	case q.Optional && text == "-":
		p.answers[q.ID] = ""
	default:
		v, err := answerQuestion(q, text)
		if err != nil {
			s.r.line("That is " + errNotAnOption.Error() + ": answer with an option's number (1–" + strconv.Itoa(len(q.Options)) + ") or its text, or n to decline.")
			s.prompt()
			return
		}
		p.answers[q.ID] = v
	}
	if q.Secret {
		resp.Secret = true
	}
	if len(p.answers) < len(in.Questions) {
		s.askNext()
		s.prompt()
		return
	}
	resp.Decision, resp.Answers = agent.DecisionAnswer, p.answers
	for _, q := range in.Questions {
		resp.Secret = resp.Secret || q.Secret
	}
	s.respond(ctx, p.runID, resp)
}

// asksSecret reports whether the next answer is a secret question's.
func (p pendingInteraction) asksSecret() bool {
	qs := p.in.Questions
	return p.in.Kind == agent.KindQuestion && len(p.answers) < len(qs) && qs[len(p.answers)].Secret
}

func (s *session) respond(ctx context.Context, runID agent.RunID, resp agent.InteractionResponse) {
	if err := s.Bot.Respond(ctx, s.chat.ID, runID, resp); err != nil {
		s.r.line("error: " + err.Error())
	}
	s.prompt()
}

// askNext names the next question of a form of several ("(2/3) Which
// port?"); the card has shown them all.
func (s *session) askNext() {
	if len(s.pending) == 0 {
		return
	}
	p := s.pending[0]
	qs := p.in.Questions
	if p.in.Kind != agent.KindQuestion || len(qs) < 2 || len(p.answers) >= len(qs) {
		return
	}
	q := qs[len(p.answers)]
	line := fmt.Sprintf("(%d/%d) %s", len(p.answers)+1, len(qs), q.Text)
	if q.Optional {
		line += " (optional: - skips it)"
	}
	s.r.line(line)
}
