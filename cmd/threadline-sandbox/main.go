// Command threadline-sandbox is the sandbox helper on its own: threadline
// starts a sandboxed agent as
//
//	threadline-sandbox POLICY_JSON -- BIN ARGS...
//
// when this binary is installed beside it (go install ./cmd/...), else as
// `threadline sandbox ...`. It confines itself with Landlock (package
// agentcore/sandbox) and then executes the agent. Being small, it starts in
// a fraction of the main binary's time: most of what a sandboxed start
// costs.
package main

import (
	"fmt"
	"os"

	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

func main() {
	err := sandbox.Exec(os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "threadline-sandbox:", err)
	os.Exit(126)
}
