// Command threadline-mcp is Threadline's MCP server for one run: the agent's
// CLI starts it over stdio (the official Go SDK,
// github.com/modelcontextprotocol/go-sdk) and it offers the thread tools
//
//	send_file(path, title?)   a workspace file into the chat thread
//	thread_files()            the thread's attachments
//	fetch_thread_file(name)   an attachment into the workspace
//
// each forwarded to the run's socket (agentcore/threadtools) named by
// THREADLINE_TOOLS_SOCKET, with the token THREADLINE_TOOLS_TOKEN. Both are
// read once at start and removed from its environment. The bot's server
// applies every rule; a refusal or a failure comes back to the model as a
// tool error (an IsError result with the reason), never as a protocol
// failure.
//
// It is its own binary, not a subcommand of threadline: the MCP SDK stays
// out of the bot's process, and this one is small enough to start for every
// run, on the host, inside the sandbox or in a container.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// The environment that names the run's socket and token.
const (
	envSocket = "THREADLINE_TOOLS_SOCKET"
	envToken  = "THREADLINE_TOOLS_TOKEN"
)

// version is the server's version in its MCP handshake.
const version = "1"

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: threadline-mcp (an MCP server over stdio; set "+envSocket+" and "+envToken+")")
		os.Exit(2)
	}
	client, err := clientFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "threadline-mcp:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newServer(client).Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "threadline-mcp:", err)
		os.Exit(1)
	}
}

// clientFromEnv reads the socket and token from the environment and removes
// them, so nothing this process might start inherits the token.
func clientFromEnv() (*threadtools.Client, error) {
	c := &threadtools.Client{Socket: os.Getenv(envSocket), Token: os.Getenv(envToken)}
	os.Unsetenv(envSocket)
	os.Unsetenv(envToken)
	if c.Socket == "" || c.Token == "" {
		return nil, errors.New(envSocket + " and " + envToken + " must be set (Threadline sets them for a run)")
	}
	return c, nil
}
