// Package anthropic holds the content block of the Anthropic Messages API,
// which Claude Code's stream-json carries in its assistant and user records
// (as do the CLIs that copy that format, jsonstream's stream-json family)
// and which the fake Messages API reads in requests: one declaration of that
// schema for every reader.
package anthropic

import (
	"encoding/json"
	"strings"
)

// Block is one content block of a message: text, thinking (with its
// signature), tool_use (ID, Name, Input), tool_result (ToolUseID, Content,
// IsError) or image (Source).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: a JSON string or an array of blocks.
	Content json.RawMessage `json:"content,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	// Source is an image block's image.
	Source *ImageSource `json:"source,omitempty"`
}

// ImageSource is an image block's source: base64 Data of MediaType when
// Type is "base64".
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Images are the image blocks of a tool_result's content that carry their
// data (base64 sources).
func (b Block) Images() []ImageSource {
	if len(b.Content) == 0 || b.Content[0] != '[' {
		return nil
	}
	var parts []Block
	if json.Unmarshal(b.Content, &parts) != nil {
		return nil
	}
	var out []ImageSource
	for _, p := range parts {
		if p.Type == "image" && p.Source != nil && p.Source.Type == "base64" && p.Source.Data != "" {
			out = append(out, *p.Source)
		}
	}
	return out
}

// ResultText flattens a tool_result's content to text: the string itself,
// or its text blocks concatenated; content that is neither is returned as
// its JSON.
func (b Block) ResultText() string {
	if len(b.Content) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(b.Content, &s); err == nil {
		return s
	}
	var parts []Block
	if err := json.Unmarshal(b.Content, &parts); err != nil {
		return string(b.Content)
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}
