// view.go: platform-neutral message views the renderer produces and the
// front-ends turn into Slack blocks or Matrix events, and the button values.

package render

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// View is the content of one platform message.
type View struct {
	// Status is a one-line context ("claude · opus · proj · 12s").
	Status string `json:"status,omitempty"`
	// Body is Markdown (code fences kept).
	Body string `json:"body,omitempty"`
	// Steps are compact lines of the plan and the latest tool steps, oldest
	// first, for platforms that show no task cards (kept in the final view).
	Steps []string `json:"steps,omitempty"`
	// Tasks are the tool steps that began in this message's text, in the
	// order they ran, each with its offset in Body.
	Tasks []Step `json:"tasks,omitempty"`
	// Plan is the agent's current plan (on the last part; nil without one).
	Plan *Plan `json:"plan,omitempty"`
	// Activity is what the agent is doing now ("is running Bash…"), for a
	// platform's status indicator; "" once the run ended. It is not part of
	// the message (nor of Hash).
	Activity string `json:"-"`
	// Footer is the final line (duration, tokens, cost, files changed).
	Footer string `json:"footer,omitempty"`
	// Buttons are shown in order in one row.
	Buttons []Button `json:"buttons,omitempty"`
	// Fallback is plain text for notifications and clients without rich
	// rendering; empty means Body.
	Fallback string `json:"fallback,omitempty"`
	// Working marks Body as a placeholder shown before the answer's first
	// text (a native stream starts empty instead).
	Working bool `json:"working,omitempty"`
	// Key identifies what a Post creates (a run's message slot). A surface that
	// can find its own messages by key adopts the message of an earlier try
	// whose answer was lost, instead of posting a duplicate.
	Key string `json:"-"`
}

// Text is the view's plain-text fallback.
func (v View) Text() string {
	if v.Fallback != "" {
		return v.Fallback
	}
	if v.Body != "" {
		return v.Body
	}
	return v.Status
}

// Hash identifies the view's content.
func (v View) Hash() string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Button styles.
const (
	StylePrimary = "primary"
	StyleDanger  = "danger"
)

// Button is a clickable action. Value is opaque to the platform and comes back
// unchanged in the Action.
type Button struct {
	// ID is unique within the message ("tl_approve", "tl_option_2").
	ID    string `json:"id"`
	Label string `json:"label"`
	Value string `json:"value"`
	Style string `json:"style,omitempty"`
}

// Button ids.
const (
	ButtonStop           = "tl_stop"
	ButtonApprove        = "tl_approve"
	ButtonApproveSession = "tl_approve_session"
	ButtonDecline        = "tl_decline"
	ButtonCancel         = "tl_cancel"
	ButtonAnswer         = "tl_answer"
	// ButtonOptionPrefix prefixes the option buttons of a question: tl_option_0, ...
	ButtonOptionPrefix = "tl_option_"
	// ButtonShipPrefix prefixes the actions on a turn's branch under its
	// final answer: the diff, push and pr commands.
	ButtonShipPrefix = "tl_ws_"
	ButtonDiff       = ButtonShipPrefix + "diff"
	ButtonPush       = ButtonShipPrefix + "push"
	ButtonPR         = ButtonShipPrefix + "pr"
)

// Ref names what a button acts on. It travels in Button.Value.
type Ref struct {
	ChatID        agent.ChatID        `json:"c"`
	RunID         agent.RunID         `json:"r,omitempty"`
	InteractionID agent.InteractionID `json:"i,omitempty"`
	Decision      agent.Decision      `json:"d,omitempty"`
	// QuestionID and Answer are set on a question's option buttons.
	QuestionID string `json:"q,omitempty"`
	Answer     string `json:"a,omitempty"`
}

// ErrBadRef is returned for a button value that is not a Ref.
var ErrBadRef = errors.New("chatops: malformed button value")

// Encode returns the Ref as a button value (at most about 2,000 bytes for
// short ids and answers).
func (r Ref) Encode() string {
	b, _ := json.Marshal(r)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeRef parses a button value made by Ref.Encode.
func DecodeRef(v string) (Ref, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %w", ErrBadRef, err)
	}
	var r Ref
	if err := json.Unmarshal(b, &r); err != nil || r.ChatID == "" {
		return Ref{}, fmt.Errorf("%w: %q", ErrBadRef, v)
	}
	return r, nil
}
