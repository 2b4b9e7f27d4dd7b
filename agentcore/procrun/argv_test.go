package procrun

import (
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestArgvPrompt(t *testing.T) {
	if !FitsArgv("abc", 3) || FitsArgv("abcd", 3) || FitsArgv("a\x00b", 10) {
		t.Error("FitsArgv: wrong bound or NUL byte accepted")
	}
	var evs []agent.Event
	emit := func(ev agent.Event) { evs = append(evs, ev) }
	err := StartError(PromptTooLarge("grok", "abcd", 3), emit)
	if !errors.Is(err, ErrPromptTooLarge) || !errors.Is(err, agent.ErrRunFailed) ||
		len(evs) != 1 || evs[0].Type != agent.EventRunFailed || !strings.Contains(evs[0].Text, "grok takes the prompt as one argument and the prompt is 4 bytes, but at most 3 fit") {
		t.Errorf("too large: %v, events %+v", err, evs)
	}
	other := errors.New("bad model")
	if err := StartError(other, emit); err != other || len(evs) != 1 {
		t.Errorf("other error: %v (events %d)", err, len(evs))
	}
}
