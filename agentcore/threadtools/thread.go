package threadtools

import (
	"context"
	"io"
	"time"
)

// DefaultMaxBytes bounds a file sent or fetched unless Config.MaxBytes says
// otherwise: 50 MB.
const DefaultMaxBytes = 50 << 20

// MaxRequestBytes bounds one request line.
const MaxRequestBytes = 64 << 10

// Thread is the chat thread a run belongs to, as the caller (chatops)
// reaches it: the server checks, the Thread posts and fetches.
type Thread interface {
	// SendFile posts f to the thread (a Slack upload, a Matrix m.file or
	// m.image) and says where it went.
	SendFile(ctx context.Context, f File) (Posted, error)
	// Files lists the thread's attachments.
	Files(ctx context.Context) ([]ThreadFile, error)
	// Fetch opens the thread's attachment called name.
	Fetch(ctx context.Context, name string) (io.ReadCloser, ThreadFile, error)
}

// File is a file the agent sends, checked: every rule passed.
type File struct {
	// Name is the name to post it under (CleanName of its base name).
	Name string
	// Title is the agent's title for it; empty: none.
	Title string
	// Content is the whole file.
	Content []byte
	// Size is len(Content).
	Size int64
	// SHA256 is the content's SHA-256, lower-case hex.
	SHA256 string
	// MIMEType is the content's type, guessed from the content and the
	// name's extension ("image/png", "text/plain; charset=utf-8").
	MIMEType string
}

// Posted says where a file went.
type Posted struct {
	// Where names the place in words ("#ops thread 1712.33").
	Where string `json:"where,omitempty"`
	// URL is a link to the posted file or message; empty: none.
	URL string `json:"url,omitempty"`
}

// ThreadFile is an attachment of the thread.
type ThreadFile struct {
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	MIMEType string    `json:"mime_type,omitempty"`
	From     string    `json:"from,omitempty"`     // who posted it (a display name)
	PostedAt time.Time `json:"posted_at,omitzero"` // when
	// Note is what the agent should know of the file fetched (there were
	// several with its name and this is the newest); empty: nothing.
	Note string `json:"note,omitempty"`
}

// Sent is what send_file did: the File's facts without its content, and
// where it went. OnSent and the agent receive it.
type Sent struct {
	Name     string `json:"name"`
	Title    string `json:"title,omitempty"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	MIMEType string `json:"mime_type"`
	Posted
}

// Fetched is what fetch_thread_file wrote.
type Fetched struct {
	// Path is the file written, as the agent sees it.
	Path   string `json:"path"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Note is the Thread's note on the file (ThreadFile.Note).
	Note string `json:"note,omitempty"`
}
