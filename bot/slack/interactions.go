// interactions.go: buttons (block_actions), the free-text answer modal
// (views.open, view_submission) and the /threadline slash command.

package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/chatops"
)

// Modal ids.
const (
	answerCallback = "tl_answer"
	answerAction   = "answer"
	questionPrefix = "q:"
)

func (b *Bot) serveInteractivity(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.verify(w, r); !ok {
		return
	}
	cb, err := slack.InteractionCallbackParse(r)
	if err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	if cb.Type == slack.InteractionTypeViewSubmission {
		if resp := validateSubmission(cb); resp != nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(resp)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
	b.onInteraction(cb)
}

// modalMeta travels in the modal's private_metadata.
type modalMeta struct {
	Ref   string        `json:"ref"`
	Place chatops.Place `json:"place"`
}

// validateSubmission returns the response_action errors of an answer modal
// with an empty answer, or nil when it is fine.
func validateSubmission(cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.View.CallbackID != answerCallback {
		return nil
	}
	errs := map[string]string{}
	for blockID, actions := range cb.View.State.Values {
		if !strings.HasPrefix(blockID, questionPrefix) {
			continue
		}
		if strings.TrimSpace(actions[answerAction].Value) == "" {
			errs[blockID] = "Write an answer, or close this and press Decline."
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return slack.NewErrorsViewSubmissionResponse(errs)
}

// onInteraction acts on a button or modal after its ack.
func (b *Bot) onInteraction(cb slack.InteractionCallback) {
	team := cb.Team.ID
	user := chatops.User{Platform: Platform, ID: cb.User.ID}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		channel := cb.Container.ChannelID
		if channel == "" {
			channel = cb.Channel.ID
		}
		thread := cb.Container.ThreadTs
		if thread == "" {
			thread = cb.Message.ThreadTimestamp
		}
		if thread == "" {
			thread = cb.Container.MessageTs
		}
		p := chatops.Place{Platform: Platform, Workspace: team, Channel: channel, Thread: thread}
		for _, a := range cb.ActionCallback.BlockActions {
			if !strings.HasPrefix(a.ActionID, "tl_") {
				continue
			}
			ref, err := chatops.DecodeRef(a.Value)
			if err != nil {
				b.log.Warn("a button with a bad value", "action", a.ActionID, "err", err)
				continue
			}
			if a.ActionID == chatops.ButtonAnswer {
				// The trigger expires 3 s after the click: open the modal now,
				// not behind the thread's other work.
				b.wg.Go(func() { b.safely(func(ctx context.Context) { b.openAnswer(ctx, cb.TriggerID, p, user, ref, a.Value) }) })
				continue
			}
			b.enqueue(p.String(), func(ctx context.Context) {
				b.report(ctx, "click", b.threads.HandleClick(ctx, chatops.Click{Place: p, User: user, Button: a.ActionID, Ref: ref}))
			})
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != answerCallback {
			return
		}
		var meta modalMeta
		if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil {
			b.log.Warn("an answer modal with bad metadata", "err", err)
			return
		}
		ref, err := chatops.DecodeRef(meta.Ref)
		if err != nil {
			b.log.Warn("an answer modal with a bad ref", "err", err)
			return
		}
		answers := map[string]string{}
		for blockID, actions := range cb.View.State.Values {
			if q, ok := strings.CutPrefix(blockID, questionPrefix); ok {
				answers[q] = actions[answerAction].Value
			}
		}
		b.enqueue(meta.Place.String(), func(ctx context.Context) {
			b.report(ctx, "answer", b.threads.HandleAnswer(ctx, chatops.Answer{Place: meta.Place, User: user, Ref: ref, Answers: answers}))
		})
	}
}

// openAnswer opens the free-text modal of a question card.
func (b *Bot) openAnswer(ctx context.Context, trigger string, p chatops.Place, u chatops.User, ref chatops.Ref, value string) {
	if !b.threads.MayAnswer(u, p) {
		b.report(ctx, "answer modal", b.surface.Ephemeral(ctx, p, u, "You are not allowed to answer the agent's requests in this channel; ask an approver."))
		return
	}
	qs := b.questions(ctx, ref)
	meta, _ := json.Marshal(modalMeta{Ref: value, Place: p})
	var blocks []slack.Block
	for _, q := range qs {
		label := q.text
		if label == "" {
			label = "Your answer"
		}
		in := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "Type your answer", false, false), answerAction).WithMultiline(true)
		blk := slack.NewInputBlock(questionPrefix+q.id, slack.NewTextBlockObject(slack.PlainTextType, clip(label, 2000), false, false), nil, in)
		if len(q.options) > 0 {
			blk.Hint = slack.NewTextBlockObject(slack.PlainTextType, clip("Options: "+strings.Join(q.options, " · "), 2000), false, false)
		}
		blocks = append(blocks, blk)
	}
	view := slack.ModalViewRequest{
		Type: slack.VTModal, CallbackID: answerCallback, PrivateMetadata: string(meta),
		Title:  slack.NewTextBlockObject(slack.PlainTextType, "Answer the agent", false, false),
		Submit: slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false),
		Close:  slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: blocks},
	}
	if _, err := b.api.OpenViewContext(ctx, trigger, view); err != nil {
		b.log.WarnContext(ctx, "open the answer modal", "err", err)
		_ = b.surface.Ephemeral(ctx, p, u, "I could not open the answer form in time ("+err.Error()+"); press Answer… again.")
	}
}

type question struct {
	id, text string
	options  []string
}

// questions returns the questions of the interaction the ref names, from the
// chat's events.
func (b *Bot) questions(ctx context.Context, ref chatops.Ref) []question {
	qs, err := b.threads.Questions(ctx, ref)
	if err != nil || len(qs) == 0 {
		return []question{{id: "answer"}}
	}
	out := make([]question, len(qs))
	for i, q := range qs {
		out[i] = question{id: q.ID, text: q.Text, options: q.Options}
	}
	return out
}

func (b *Bot) serveCommand(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.verify(w, r); !ok {
		return
	}
	cmd, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "bad command", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	b.onSlash(cmd)
}

// onSlash runs /threadline after its ack; the reply is ephemeral.
func (b *Bot) onSlash(cmd slack.SlashCommand) {
	p := chatops.Place{Platform: Platform, Workspace: cmd.TeamID, Channel: cmd.ChannelID}
	u := chatops.User{Platform: Platform, ID: cmd.UserID}
	b.enqueue("slash:"+p.Channel, func(ctx context.Context) {
		b.surface.asked(p, u.ID)
		reply, err := b.threads.HandleSlash(ctx, chatops.SlashCommand{Place: p, User: u, Text: cmd.Text})
		b.report(ctx, "slash command", err)
		if reply != "" {
			if eerr := b.surface.Ephemeral(ctx, p, u, reply); eerr != nil {
				b.log.WarnContext(ctx, "slash command reply", "err", eerr)
			}
		}
	})
}
