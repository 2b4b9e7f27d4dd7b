// split.go: cutting long Markdown into messages on paragraph or fence
// boundaries, never breaking a code fence and never dropping a byte.

package render

import (
	"strings"
	"unicode/utf8"
)

const fenceMark = "```"

// segment is one part of a split text: text[start:end], reopened with the fence
// line reopen (when the part starts inside a code fence) and closed with a fence
// line when close is set (the part ends inside one).
type segment struct {
	start, end int
	reopen     string
	close      bool
}

// Split cuts markdown into parts of at most limit bytes each (limit is raised
// to 64 when smaller). It prefers the last paragraph boundary in the window (a
// blank line or a code fence edge, outside a fence) unless that leaves the part
// less than half full, then the last line break, then a rune boundary. A part
// that ends inside a code fence is closed with a fence line and the next part
// reopens it with the same info string, so every part renders on its own; apart
// from those added fence lines the parts are the input, in order.
//
// Split is greedy and each cut depends only on the text before it and its next
// line, so while the text grows by appending, every part but the last is final:
// a streamed answer and its replay are split the same way.
func Split(markdown string, limit int) []string {
	segs := segments(markdown, limit)
	out := make([]string, len(segs))
	for i, sg := range segs {
		out[i] = sg.render(markdown)
	}
	return out
}

func (sg segment) render(s string) string {
	var b strings.Builder
	if sg.reopen != "" {
		b.WriteString(sg.reopen)
		b.WriteByte('\n')
	}
	b.WriteString(s[sg.start:sg.end])
	if sg.close {
		if !strings.HasSuffix(s[sg.start:sg.end], "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(fenceMark)
	}
	return b.String()
}

func segments(s string, limit int) []segment {
	limit = max(limit, 64)
	var (
		out  []segment
		open string
		pos  int
	)
	for {
		prefix := 0
		if open != "" {
			prefix = len(open) + 1
		}
		if prefix+len(s)-pos <= limit {
			return append(out, segment{start: pos, end: len(s), reopen: open})
		}
		// Leave room for a closing "\n```".
		window := limit - prefix - len(fenceMark) - 1
		cut, after := cutPoint(s[pos:], window, open)
		out = append(out, segment{start: pos, end: pos + cut, reopen: open, close: after != ""})
		pos, open = pos+cut, after
	}
}

// maxFenceInfo bounds the fence line kept as the state: a part that reopens
// a fence repeats it, so a very long info string is cut (at a rune boundary)
// to leave room for the text.
const maxFenceInfo = 16

// fenceStep returns the fence state after the line ln given the state before:
// "" outside a fence, else the (possibly shortened) line that opened it.
func fenceStep(state, ln string) string {
	t := strings.TrimSpace(ln)
	if !strings.HasPrefix(t, fenceMark) {
		return state
	}
	if state == "" {
		if len(t) > len(fenceMark)+maxFenceInfo {
			n := len(fenceMark) + maxFenceInfo
			for n > len(fenceMark) && !utf8.RuneStart(t[n]) {
				n--
			}
			t = t[:n]
		}
		return t
	}
	if strings.Trim(t, "`") == "" {
		return ""
	}
	return state
}

// cutPoint picks a cut in s within window bytes, given the fence line open at
// the start of s ("" outside a fence), and returns the cut and the fence line
// open there.
func cutPoint(s string, window int, open string) (cut int, state string) {
	window = max(window, 1)
	var (
		para, line           = -1, -1
		paraState, lineState string
		prevBlank, prevFence bool
	)
	state = open
	for pos := 0; pos < len(s) && pos <= window; {
		// pos is a line start with fence state `state`. Whether it is a
		// candidate depends only on the lines before it.
		if pos > 0 {
			line, lineState = pos, state
			if state == "" && (prevBlank || prevFence) {
				para, paraState = pos, state
			}
		}
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break
		}
		ln := s[pos : pos+nl]
		before := state
		state = fenceStep(state, ln)
		prevBlank = strings.TrimSpace(ln) == ""
		prevFence = before != "" && state == ""
		pos += nl + 1
	}
	switch {
	case para > 0 && para >= window/2:
		return para, paraState
	case line > 0:
		return line, lineState
	}
	// No line break in the window: cut at a rune boundary. The part shows
	// the cut line as a whole line, so the state is the one after it: a fence
	// line longer than the window opens (or closes) a fence there, which the
	// part closes and the next part reopens.
	cut = min(window, len(s))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 {
		_, cut = utf8.DecodeRuneInString(s)
	}
	return cut, fenceAtCut(s[:cut], open)
}

// fenceAtCut returns the fence state at the end of s, cut mid-line: the
// unfinished last line counts as a line, as it does in the part that ends
// with it.
func fenceAtCut(s, open string) string {
	state := open
	for ln := range strings.Lines(s) {
		state = fenceStep(state, strings.TrimSuffix(ln, "\n"))
	}
	return state
}
