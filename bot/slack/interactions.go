// interactions.go: buttons (block_actions), the free-text answer modal
// (views.open, view_submission) and the /threadline slash command.

package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// Modal ids.
const (
	answerCallback = "tl_answer"
	answerAction   = "answer"
	questionPrefix = "q:"
	// A question with options shows them as a choice (choiceAction in its
	// q: block) and, when it allows another answer, a free-text field
	// (answerAction in its o: block).
	choiceAction = "choice"
	otherPrefix  = "o:"
)

// parseInteractionBody parses an interactivity request body (a form with a
// JSON "payload" field), as slack.InteractionCallbackParse does.
func parseInteractionBody(body []byte) (slack.InteractionCallback, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return slack.InteractionCallback{}, err
	}
	return parseInteractionPayload([]byte(form.Get("payload")))
}

// parseInteractionPayload parses an interaction's JSON, the payload of a
// Socket Mode "interactive" envelope.
func parseInteractionPayload(payload []byte) (slack.InteractionCallback, error) {
	var cb slack.InteractionCallback
	if len(payload) == 0 {
		return cb, errors.New("payload is empty")
	}
	err := json.Unmarshal(payload, &cb)
	return cb, err
}

func (b *Bot) serveInteractivity(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verify(w, r)
	if !ok {
		return
	}
	cb, err := parseInteractionBody(body)
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
	ctx, cancel := context.WithTimeout(r.Context(), queueWait)
	defer cancel()
	if !b.onInteraction(ctx, cb) {
		refuseBusy(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// modalMeta travels in the modal's private_metadata.
type modalMeta struct {
	Ref   string        `json:"ref"`
	Place chatops.Place `json:"place"`
	// Optional are the ids of the questions that may stay unanswered.
	Optional []string `json:"optional,omitempty"`
}

// validateSubmission returns the response_action errors of an answer modal
// with an empty answer, or nil when it is fine. A submission without state is
// not refused here: onInteraction tells the person it arrived empty.
func validateSubmission(cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.View.CallbackID != answerCallback || cb.View.State == nil {
		return nil
	}
	var meta modalMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	errs := map[string]string{}
	for blockID := range cb.View.State.Values {
		q, ok := strings.CutPrefix(blockID, questionPrefix)
		if !ok || slices.Contains(meta.Optional, q) {
			continue
		}
		if strings.TrimSpace(submitted(cb.View.State.Values, q)) == "" {
			errs[blockID] = "Write an answer, or close this and press Decline."
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return slack.NewErrorsViewSubmissionResponse(errs)
}

// action is one thing an interaction asks of the bot, decoded from the
// payload alone: a click, an answer, opening the answer modal, or only a note
// to the person.
type action struct {
	who    who
	click  *chatops.Click
	answer *chatops.Answer
	// modal is set for the Answer… button: open the modal (trigger) now.
	modal *modalRequest
	// note is told to the person (ephemeral) when set.
	note string
}

type modalRequest struct {
	trigger string
	ref     chatops.Ref
	value   string
}

// emptySubmission is the note for an answer modal that came back without its
// fields.
const emptySubmission = "Your answer did not reach me (the form came back without its fields). Press Answer… on the card and send it again."

// decodeInteraction turns a button press or a modal submission into actions.
func (b *Bot) decodeInteraction(cb slack.InteractionCallback) []action {
	team := cb.Team.ID
	user := chatops.User{Platform: Platform, ID: cb.User.ID}
	if user.ID == "" {
		return nil
	}
	var out []action
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
		if channel == "" {
			return nil
		}
		p := chatops.Place{Platform: Platform, Workspace: team, Channel: channel, Thread: thread}
		for _, a := range cb.ActionCallback.BlockActions {
			if a == nil || !strings.HasPrefix(a.ActionID, "tl_") {
				continue
			}
			ref, err := chatops.DecodeRef(a.Value)
			if err != nil {
				b.log.Warn("a button with a bad value", "action", a.ActionID, "err", err)
				continue
			}
			w := who{place: p, user: user}
			if a.ActionID == chatops.ButtonAnswer {
				out = append(out, action{who: w, modal: &modalRequest{trigger: cb.TriggerID, ref: ref, value: a.Value}})
				continue
			}
			out = append(out, action{who: w, click: &chatops.Click{Place: p, User: user, Button: a.ActionID, Ref: ref}})
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != answerCallback {
			return nil
		}
		var meta modalMeta
		if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil {
			b.log.Warn("an answer modal with bad metadata", "err", err)
			return nil
		}
		if meta.Place.Platform != Platform || meta.Place.Channel == "" {
			b.log.Warn("an answer modal for no thread", logkey.Place, meta.Place.String())
			return nil
		}
		w := who{place: meta.Place, user: user}
		if cb.View.State == nil {
			b.log.Warn("an answer modal submitted without state", logkey.Place, meta.Place.String(), logkey.User, user.ID)
			return []action{{who: w, note: emptySubmission}}
		}
		ref, err := chatops.DecodeRef(meta.Ref)
		if err != nil {
			b.log.Warn("an answer modal with a bad ref", "err", err)
			return nil
		}
		answers := map[string]string{}
		for blockID := range cb.View.State.Values {
			if q, ok := strings.CutPrefix(blockID, questionPrefix); ok {
				answers[q] = submitted(cb.View.State.Values, q)
			}
		}
		out = append(out, action{who: w, answer: &chatops.Answer{Place: meta.Place, User: user, Ref: ref, Answers: answers}})
	}
	return out
}

// onInteraction hands a button or modal to the desk (opening a modal and
// notes run at once). It returns false when ctx ended before there was room
// in a thread's queue.
func (b *Bot) onInteraction(ctx context.Context, cb slack.InteractionCallback) bool {
	for _, a := range b.decodeInteraction(cb) {
		switch {
		case a.modal != nil:
			// The trigger expires 3 s after the click: open the modal now,
			// not behind the thread's other work.
			m := a.modal
			b.goSafely("answer modal", a.who, func(ctx context.Context) { b.openAnswer(ctx, m.trigger, a.who.place, a.who.user, m.ref, m.value) })
		case a.click != nil:
			if !b.put(ctx, chatops.Inbound{Click: a.click}) {
				return false
			}
		case a.answer != nil:
			if !b.put(ctx, chatops.Inbound{Answer: a.answer}) {
				return false
			}
		case a.note != "":
			w := a.who
			b.goSafely("interaction note", w, func(ctx context.Context) {
				b.report(ctx, "interaction note", b.surface.Ephemeral(ctx, w.place, w.user, a.note))
			})
		}
	}
	return true
}

// openAnswer opens the free-text modal of a question card.
func (b *Bot) openAnswer(ctx context.Context, trigger string, p chatops.Place, u chatops.User, ref chatops.Ref, value string) {
	if !b.threads.MayAnswer(u, p) {
		b.report(ctx, "answer modal", b.surface.Ephemeral(ctx, p, u, "You are not allowed to answer the agent's requests in this channel; ask an approver."))
		return
	}
	qs := b.questions(ctx, ref)
	mm := modalMeta{Ref: value, Place: p}
	var blocks []slack.Block
	for _, q := range qs {
		if q.optional {
			mm.Optional = append(mm.Optional, q.id)
		}
		blocks = append(blocks, questionBlocks(q)...)
	}
	meta, _ := json.Marshal(mm)
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
	// multi lets several options be picked; other also takes a typed
	// answer; optional lets the question stay unanswered.
	multi, other, optional bool
}

// Slack's limits on a choice: 10 radio buttons or checkboxes, option values
// of 150 characters, labels of 75.
const (
	maxChoices     = 10
	maxOptionValue = 150
	maxOptionText  = 75
)

// questionBlocks are a question's input blocks: its options as radio
// buttons (checkboxes when several may be picked), with a free-text field
// beside them when another answer is allowed; a text field alone for a
// question without options, or with more or longer options than a choice
// holds (they are listed in its hint).
func questionBlocks(q question) []slack.Block {
	label := q.text
	if label == "" {
		label = "Your answer"
	}
	labelText := slack.NewTextBlockObject(slack.PlainTextType, clip(label, 2000), false, false)
	choice := len(q.options) > 0 && len(q.options) <= maxChoices
	for _, o := range q.options {
		if o == "" || len([]rune(o)) > maxOptionValue {
			choice = false
		}
	}
	if !choice {
		in := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "Type your answer", false, false), answerAction).WithMultiline(true)
		blk := slack.NewInputBlock(questionPrefix+q.id, labelText, nil, in).WithOptional(q.optional)
		if len(q.options) > 0 {
			blk.Hint = slack.NewTextBlockObject(slack.PlainTextType, clip("Options: "+strings.Join(q.options, " · "), 2000), false, false)
		}
		return []slack.Block{blk}
	}
	opts := make([]*slack.OptionBlockObject, len(q.options))
	for i, o := range q.options {
		opts[i] = slack.NewOptionBlockObject(o, slack.NewTextBlockObject(slack.PlainTextType, clip(o, maxOptionText), false, false), nil)
	}
	var el slack.BlockElement = slack.NewRadioButtonsBlockElement(choiceAction, opts...)
	if q.multi {
		el = slack.NewCheckboxGroupsBlockElement(choiceAction, opts...)
	}
	// With another answer allowed, either field may carry the answer: Slack
	// must not insist on the choice (the bot checks one of them is there).
	out := []slack.Block{slack.NewInputBlock(questionPrefix+q.id, labelText, nil, el).WithOptional(q.optional || q.other)}
	if q.other {
		in := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "None of these? Type your answer", false, false), answerAction)
		out = append(out, slack.NewInputBlock(otherPrefix+q.id, slack.NewTextBlockObject(slack.PlainTextType, "Or another answer", false, false), nil, in).WithOptional(true))
	}
	return out
}

// submitted is the answer to question q in a submitted modal: the typed
// other answer when there is one, else the picked options (one per line),
// else the text field.
func submitted(values map[string]map[string]slack.BlockAction, q string) string {
	if other := strings.TrimSpace(values[otherPrefix+q][answerAction].Value); other != "" {
		return values[otherPrefix+q][answerAction].Value
	}
	a := values[questionPrefix+q]
	if c, ok := a[choiceAction]; ok {
		if len(c.SelectedOptions) > 0 {
			picked := make([]string, 0, len(c.SelectedOptions))
			for _, o := range c.SelectedOptions {
				picked = append(picked, o.Value)
			}
			return strings.Join(picked, "\n")
		}
		return c.SelectedOption.Value
	}
	return a[answerAction].Value
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
		out[i] = question{id: q.ID, text: q.Text, options: q.Options, multi: q.MultiSelect, other: q.AllowOther, optional: q.Optional}
	}
	return out
}

// parseSlashBody parses a slash command request body (a form), as
// slack.SlashCommandParse does.
func parseSlashBody(body []byte) (slack.SlashCommand, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return slack.SlashCommand{}, err
	}
	return slack.SlashCommand{
		Token: form.Get("token"), TeamID: form.Get("team_id"), TeamDomain: form.Get("team_domain"),
		EnterpriseID: form.Get("enterprise_id"), ChannelID: form.Get("channel_id"), ChannelName: form.Get("channel_name"),
		UserID: form.Get("user_id"), UserName: form.Get("user_name"), Command: form.Get("command"), Text: form.Get("text"),
		ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"), APIAppID: form.Get("api_app_id"),
	}, nil
}

func (b *Bot) serveCommand(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verify(w, r)
	if !ok {
		return
	}
	cmd, err := parseSlashBody(body)
	if err != nil {
		http.Error(w, "bad command", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), queueWait)
	defer cancel()
	if !b.onSlash(ctx, cmd) {
		refuseBusy(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// decodeSlash turns /threadline into a chatops slash command.
func decodeSlash(cmd slack.SlashCommand) chatops.SlashCommand {
	return chatops.SlashCommand{
		Place: chatops.Place{Platform: Platform, Workspace: cmd.TeamID, Channel: cmd.ChannelID},
		User:  chatops.User{Platform: Platform, ID: cmd.UserID}, Text: cmd.Text,
	}
}

// onSlash hands /threadline to the desk (the channel's actor), which
// replies ephemerally. It returns false when ctx ended before there was room
// in the channel's queue.
func (b *Bot) onSlash(ctx context.Context, cmd slack.SlashCommand) bool {
	sc := decodeSlash(cmd)
	if sc.User.ID == "" || sc.Place.Channel == "" {
		return true
	}
	b.surface.asked(sc.Place, sc.User.ID)
	return b.put(ctx, chatops.Inbound{Slash: &sc})
}
