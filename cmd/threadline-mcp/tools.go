package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadline-bot/threadline/agentcore/shipgate"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// Tools is the subset of threadtools.Client the tools call.
type Tools interface {
	SendFile(ctx context.Context, path, title string) (threadtools.Sent, error)
	Files(ctx context.Context) ([]threadtools.ThreadFile, error)
	FetchFile(ctx context.Context, name string) (threadtools.Fetched, error)
}

type sendFileIn struct {
	Path  string `json:"path" jsonschema:"the file's path, relative to your working directory (or absolute inside it)"`
	Title string `json:"title,omitempty" jsonschema:"an optional title shown with the file in the thread"`
}

type sendFileOut struct {
	Name     string `json:"name" jsonschema:"the name the file was posted under"`
	Size     int64  `json:"size" jsonschema:"its size in bytes"`
	SHA256   string `json:"sha256" jsonschema:"its SHA-256, hex"`
	MIMEType string `json:"mime_type" jsonschema:"its content type"`
	Where    string `json:"where,omitempty" jsonschema:"where it was posted"`
	URL      string `json:"url,omitempty" jsonschema:"a link to it, when the chat gives one"`
}

type threadFilesIn struct{}

type threadFile struct {
	Name     string `json:"name" jsonschema:"the attachment's name, to pass to fetch_thread_file"`
	Size     int64  `json:"size" jsonschema:"its size in bytes"`
	MIMEType string `json:"mime_type,omitempty" jsonschema:"its content type"`
	From     string `json:"from,omitempty" jsonschema:"who posted it"`
	PostedAt string `json:"posted_at,omitempty" jsonschema:"when, RFC 3339"`
}

type threadFilesOut struct {
	Files []threadFile `json:"files" jsonschema:"the thread's attachments, oldest first"`
}

type fetchIn struct {
	Name string `json:"name" jsonschema:"the attachment's name, as thread_files lists it"`
}

type fetchOut struct {
	Path   string `json:"path" jsonschema:"where the file was written"`
	Name   string `json:"name" jsonschema:"the file's name in your working directory"`
	Size   int64  `json:"size" jsonschema:"its size in bytes"`
	SHA256 string `json:"sha256" jsonschema:"its SHA-256, hex"`
}

const sendFileDescription = `Send a file from your working directory to the chat thread you are answering in, so the people there receive it (an image is shown inline). Use it for anything you made that they should see or download: a chart, a screenshot, a report, a patch, a build artifact. Saying a file is attached does not attach it; only this tool does.

Only regular files inside your working directory can be sent (no directories, devices or links that lead outside it), up to the size limit (50 MB unless configured otherwise). A file holding a configured secret, a private key or an access token is refused: the error says why, nothing is posted, and the people in the thread are told. Do not try to get around a refusal; tell the people instead.`

const threadFilesDescription = `List the files attached to the chat thread you are answering in (name, size, type, who posted them and when). Fetch one into your working directory with fetch_thread_file.`

const fetchDescription = `Copy a file attached to the chat thread into your working directory, so you can read or use it. Give its name as thread_files lists it. The file is written under that name at the top of your working directory (with " (1)", " (2)", ... added when the name is taken; an existing file is never overwritten), and the tool returns the path written.`

// newServer returns the MCP server of the thread tools over t.
func newServer(t Tools) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "threadline", Title: "Threadline thread tools", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "send_file", Title: "Send a file to the thread", Description: sendFileDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sendFileIn) (*mcp.CallToolResult, sendFileOut, error) {
			sent, err := t.SendFile(ctx, in.Path, in.Title)
			if err != nil {
				return nil, sendFileOut{}, err
			}
			out := sendFileOut{Name: sent.Name, Size: sent.Size, SHA256: sent.SHA256, MIMEType: sent.MIMEType,
				Where: sent.Where, URL: sent.URL}
			where := "the thread"
			if sent.Where != "" {
				where = sent.Where
			}
			return text(fmt.Sprintf("Sent %s (%s, %s) to %s.", sent.Name, shipgate.HumanSize(sent.Size), sent.MIMEType, where)), out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "thread_files", Title: "List the thread's files", Description: threadFilesDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ threadFilesIn) (*mcp.CallToolResult, threadFilesOut, error) {
			files, err := t.Files(ctx)
			if err != nil {
				return nil, threadFilesOut{}, err
			}
			out := threadFilesOut{Files: make([]threadFile, 0, len(files))}
			var b strings.Builder
			if len(files) == 0 {
				b.WriteString("The thread has no attached files.")
			}
			for _, f := range files {
				tf := threadFile{Name: f.Name, Size: f.Size, MIMEType: f.MIMEType, From: f.From}
				if !f.PostedAt.IsZero() {
					tf.PostedAt = f.PostedAt.UTC().Format(time.RFC3339)
				}
				out.Files = append(out.Files, tf)
				fmt.Fprintf(&b, "%s (%s", f.Name, shipgate.HumanSize(f.Size))
				if f.MIMEType != "" {
					b.WriteString(", " + f.MIMEType)
				}
				if f.From != "" {
					b.WriteString(", from " + f.From)
				}
				if tf.PostedAt != "" {
					b.WriteString(", " + tf.PostedAt)
				}
				b.WriteString(")\n")
			}
			return text(strings.TrimSuffix(b.String(), "\n")), out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fetch_thread_file", Title: "Fetch a file of the thread", Description: fetchDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, in fetchIn) (*mcp.CallToolResult, fetchOut, error) {
			f, err := t.FetchFile(ctx, in.Name)
			if err != nil {
				return nil, fetchOut{}, err
			}
			out := fetchOut{Path: f.Path, Name: f.Name, Size: f.Size, SHA256: f.SHA256}
			msg := fmt.Sprintf("Wrote %s (%s).", f.Path, shipgate.HumanSize(f.Size))
			if f.Note != "" {
				msg += " Note: " + f.Note + "."
			}
			return text(msg), out, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
