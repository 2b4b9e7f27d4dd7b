package outbox

import "time"

// SetSharedTiming sets how long o waits for its shared limiter's answer and
// how long it leaves a failed one alone (limiter.go's sharedAnswer and
// sharedBreak). Call it before Run.
func SetSharedTiming(o *Outbox, answer, pause time.Duration) {
	o.sharedAnswer, o.sharedBreak = answer, pause
}
