// views.go: the renderer's and the outbox's types under their chatops names,
// so that front-ends keep writing chatops.View, chatops.ButtonApprove and
// chatops.Budget while the code lives in chatops/render and chatops/outbox.

package chatops

import (
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// View is the content of one platform message (render.View).
type View = render.View

// Button is a clickable action (render.Button).
type Button = render.Button

// Ref names what a button acts on; it travels in Button.Value (render.Ref).
type Ref = render.Ref

// RenderOptions shape the views of a run (render.RenderOptions).
type RenderOptions = render.RenderOptions

// Rate is a token bucket (outbox.Rate).
type Rate = outbox.Rate

// Budget is a workspace's rate budget (outbox.Budget).
type Budget = outbox.Budget

// Limiter is a rate budget shared by replicas (outbox.Limiter).
type Limiter = outbox.Limiter

// OutboxStats counts a workspace's calls (outbox.Stats).
type OutboxStats = outbox.Stats

// Button styles and ids (see render).
const (
	StylePrimary = render.StylePrimary
	StyleDanger  = render.StyleDanger

	ButtonStop           = render.ButtonStop
	ButtonApprove        = render.ButtonApprove
	ButtonApproveSession = render.ButtonApproveSession
	ButtonDecline        = render.ButtonDecline
	ButtonCancel         = render.ButtonCancel
	ButtonAnswer         = render.ButtonAnswer
	// ButtonOptionPrefix prefixes the option buttons of a question.
	ButtonOptionPrefix = render.ButtonOptionPrefix
	// ButtonShipPrefix prefixes the actions on a turn's branch (diff, push,
	// pr: ButtonDiff, ButtonPush, ButtonPR).
	ButtonShipPrefix = render.ButtonShipPrefix
	ButtonDiff       = render.ButtonDiff
	ButtonPush       = render.ButtonPush
	ButtonPR         = render.ButtonPR
)

// ErrBadRef is returned for a button value that is not a Ref.
var ErrBadRef = render.ErrBadRef

// DecodeRef parses a button value made by Ref.Encode.
func DecodeRef(v string) (Ref, error) { return render.DecodeRef(v) }
