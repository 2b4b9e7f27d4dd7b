// KnownSession: the session a run continues, as its parser is told.

package procrun

import "github.com/threadline-bot/threadline/agentcore/agent"

// KnownSession is the session req continues: its ResumeID, or "" for a
// fresh start and for a fork (a fork, native or not, reports a new session).
// A provider's parser is made with it, and a CLI without native fork
// resumes it.
func KnownSession(req agent.RunRequest) string {
	if req.Fork {
		return ""
	}
	return req.ResumeID
}
