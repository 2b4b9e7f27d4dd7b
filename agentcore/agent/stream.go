// Stream: the emit side of a provider's run, guarding the terminal invariant.

package agent

import "log/slog"

// Stream passes a run's events to Emit until the first terminal event and
// drops any later one (a run has exactly one end), remembering the terminal
// type and the text of a run.failed. It is used from the run's goroutine.
type Stream struct {
	Emit func(Event)
	// Log, when set, is told about dropped events at debug level.
	Log *slog.Logger
	// Terminal is the type of the terminal event sent, "" until then.
	Terminal EventType
	// Failure is the text of the run.failed sent, if any.
	Failure string
}

// Send emits ev unless the run already ended.
func (s *Stream) Send(ev Event) {
	if s.Terminal != "" {
		if s.Log != nil {
			s.Log.Debug("event after terminal dropped", "type", ev.Type)
		}
		return
	}
	if ev.Type.Terminal() {
		s.Terminal = ev.Type
		if ev.Type == EventRunFailed {
			s.Failure = ev.Text
		}
	}
	s.Emit(ev)
}
