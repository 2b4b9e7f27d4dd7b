package threadtools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
)

// Client calls a run's Server: cmd/threadline-mcp holds one. Each call is
// one connection, so a Client needs no closing and survives a server that
// restarted on the same socket.
type Client struct {
	// Socket is the server's socket path.
	Socket string
	// Token is the run's token.
	Token string
}

// ToolError is the server's answer that a request failed: a plain reason
// for the agent ("refused: out/x.txt holds a GitHub token (line 2)").
type ToolError struct{ Reason string }

func (e *ToolError) Error() string { return e.Reason }

// SendFile asks the server to post the workspace file at path.
func (c *Client) SendFile(ctx context.Context, path, title string) (Sent, error) {
	resp, err := c.call(ctx, request{Op: opSendFile, Path: path, Title: title})
	if err != nil {
		return Sent{}, err
	}
	if resp.Sent == nil {
		return Sent{}, errors.New("threadtools: response without a result")
	}
	return *resp.Sent, nil
}

// Files lists the thread's attachments.
func (c *Client) Files(ctx context.Context) ([]ThreadFile, error) {
	resp, err := c.call(ctx, request{Op: opFiles})
	if err != nil {
		return nil, err
	}
	return resp.Files, nil
}

// FetchFile asks the server to copy the thread's attachment called name
// into the workspace.
func (c *Client) FetchFile(ctx context.Context, name string) (Fetched, error) {
	resp, err := c.call(ctx, request{Op: opFetchFile, Name: name})
	if err != nil {
		return Fetched{}, err
	}
	if resp.Fetched == nil {
		return Fetched{}, errors.New("threadtools: response without a result")
	}
	return *resp.Fetched, nil
}

// call sends req and reads its response; a response's error is a
// *ToolError.
func (c *Client) call(ctx context.Context, req request) (response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return response{}, fmt.Errorf("cannot reach Threadline: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req.Token = c.Token
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return response{}, fmt.Errorf("threadtools: send: %w", err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return response{}, ctx.Err()
		}
		return response{}, fmt.Errorf("threadtools: no response: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return response{}, fmt.Errorf("threadtools: malformed response: %w", err)
	}
	if resp.Error != "" {
		return response{}, &ToolError{Reason: resp.Error}
	}
	return resp, nil
}
