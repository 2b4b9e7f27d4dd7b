package shipgate

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrMalformedDiff is wrapped by ParseDiff's errors: the input is not a
// diff the gate can read, so it cannot clear it.
var ErrMalformedDiff = errors.New("malformed diff")

// maxBinaryScan bounds how much of a binary file's content (or delta) is
// inflated to be scanned; its size comes from the patch's header.
const maxBinaryScan = 64 << 20

// ParseDiff reads a unified diff into Files: what `git diff` prints between
// the base and the branch (with --binary, binary files come with their
// content and size; without it, with no size), or a plain unified diff
// (--- / +++ / @@). Paths are the new ones, without git's "b/" prefix (and
// C-style quoting undone). Only added lines are kept, with their new line
// numbers; a new text file gets its Size. Text that is not a diff (no file
// in it, terminal colours, a hunk cut short, a combined diff, a broken
// binary patch) is an error wrapping ErrMalformedDiff.
func ParseDiff(diff []byte) ([]File, error) {
	p := &diffParser{data: diff}
	if err := p.parse(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %w", ErrMalformedDiff, p.lineNo, err)
	}
	return p.files, nil
}

type diffParser struct {
	data   []byte
	pos    int
	lineNo int

	files []File
	cur   *fileState
}

// fileState is the file being read.
type fileState struct {
	File
	git       bool // opened by "diff --git"
	gitPrefix bool // "diff --git a/… b/…": strip b/ from +++ paths
	oldPath   string
	newFile   bool
	sawHunk   bool
	sawPlus   bool // a +++ line was read
	noEOL     bool // the new side's last line came ("\ No newline at end of file")
	added     strings.Builder
	blockLine int // line of the block in added, 0: none open
	blocks    []Block
	addedSize int64
}

// next returns the next line without its "\n", and false at the end.
func (p *diffParser) next() ([]byte, bool) {
	if p.pos >= len(p.data) {
		return nil, false
	}
	rest := p.data[p.pos:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		p.pos = len(p.data)
		p.lineNo++
		return rest, true
	}
	p.pos += i + 1
	p.lineNo++
	return rest[:i], true
}

// peek returns the next line without consuming it.
func (p *diffParser) peek() []byte {
	rest := p.data[p.pos:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		return rest[:i]
	}
	return rest
}

func (p *diffParser) parse() error {
	sawText := false
	for {
		line, ok := p.next()
		if !ok {
			break
		}
		if len(bytes.TrimSpace(line)) > 0 {
			sawText = true
		}
		if bytes.IndexByte(line, 0x1b) >= 0 {
			return errors.New("terminal colour codes (run git diff with --no-color)")
		}
		if err := p.header(line); err != nil {
			return err
		}
	}
	if err := p.finish(); err != nil {
		return err
	}
	if sawText && len(p.files) == 0 {
		return errors.New("no file in it")
	}
	return nil
}

// header reads one line outside a hunk.
func (p *diffParser) header(line []byte) error {
	s := string(line)
	switch {
	case strings.HasPrefix(s, "diff --git "):
		if err := p.finish(); err != nil {
			return err
		}
		p.cur = &fileState{File: File{Size: -1}, git: true}
		path, prefixed := gitHeaderPath(s[len("diff --git "):])
		p.cur.Path, p.cur.gitPrefix = path, prefixed
	case strings.HasPrefix(s, "diff --cc ") || strings.HasPrefix(s, "diff --combined ") || strings.HasPrefix(s, "@@@ "):
		return errors.New("a combined (merge) diff: diff the base and the branch instead")
	case strings.HasPrefix(s, "--- ") && p.opensPlainFile():
		if err := p.finish(); err != nil {
			return err
		}
		p.cur = &fileState{File: File{Size: -1}}
	case strings.HasPrefix(s, "+++ "):
		if p.cur == nil {
			return errors.New("+++ without a file header")
		}
		// git strips "b/" when its prefixes are on; a plain diff when its
		// paths are the classic a/… and b/….
		strip := p.cur.gitPrefix || !p.cur.git && strings.HasPrefix(p.cur.oldPath, "a/")
		path, err := diffPath(s[len("+++ "):], strip)
		if err != nil {
			return err
		}
		p.cur.sawPlus = true
		if path == "/dev/null" {
			p.cur.Deleted = true
		} else {
			p.cur.Path = path
		}
	case strings.HasPrefix(s, "--- "):
		if p.cur == nil {
			return errors.New("--- without a file header")
		}
		if strings.TrimSpace(strings.SplitN(s[4:], "\t", 2)[0]) == "/dev/null" {
			p.cur.newFile = true
		}
		if path, err := diffPath(s[len("--- "):], false); err == nil {
			p.cur.oldPath = path
			if p.cur.Path == "" && path != "/dev/null" {
				if p.cur.gitPrefix {
					path = strings.TrimPrefix(path, "a/")
				}
				p.cur.Path = path // a deletion's +++ is /dev/null
			}
		}
	case strings.HasPrefix(s, "@@ "):
		if p.cur == nil {
			return errors.New("hunk without a file header")
		}
		return p.hunk(s)
	case p.cur == nil:
		// Text before the first file (a commit message, a diffstat).
	case strings.HasPrefix(s, "new file mode "):
		p.cur.newFile = true
	case strings.HasPrefix(s, "deleted file mode "):
		p.cur.Deleted = true
	case strings.HasPrefix(s, "rename to ") || strings.HasPrefix(s, "copy to "):
		_, rest, _ := strings.Cut(s, " to ")
		path, err := unquote(rest)
		if err != nil {
			return err
		}
		p.cur.Path = path
	case strings.HasPrefix(s, "Binary files ") && strings.HasSuffix(s, " differ"):
		p.cur.Binary = true
		if strings.HasSuffix(s, " and /dev/null differ") {
			p.cur.Deleted = true
		}
	case s == "GIT binary patch":
		return p.binaryPatch()
	case strings.HasPrefix(s, "+") && p.cur.sawHunk:
		return errors.New("an added line outside a hunk (a hunk's line counts are wrong)")
	}
	return nil
}

// opensPlainFile reports whether a "--- " line starts a file of a plain
// unified diff: it is followed by "+++ " and is not the ---/+++ pair a
// "diff --git" header waits for.
func (p *diffParser) opensPlainFile() bool {
	if !bytes.HasPrefix(p.peek(), []byte("+++ ")) {
		return false
	}
	return p.cur == nil || !p.cur.git || p.cur.sawHunk || p.cur.sawPlus
}

// hunk reads a hunk from its "@@ -a,b +c,d @@" header.
func (p *diffParser) hunk(header string) error {
	oldCount, newStart, newCount, err := hunkHeader(header)
	if err != nil {
		return err
	}
	f := p.cur
	f.sawHunk = true
	newLine := newStart
	if newCount == 0 {
		newLine++
	}
	lastAdded := false
	for oldCount > 0 || newCount > 0 {
		line, ok := p.next()
		if !ok {
			return fmt.Errorf("the diff ends inside a hunk (%d old and %d new lines missing)", oldCount, newCount)
		}
		c := byte(' ')
		if len(line) > 0 {
			c = line[0]
		}
		lastAdded = false
		switch c {
		case ' ': // context (an empty line: context whose space was trimmed)
			if oldCount == 0 || newCount == 0 {
				return errors.New("more context lines than the hunk header counts")
			}
			if f.noEOL {
				return errors.New("a line after the file's last line")
			}
			oldCount--
			newCount--
			newLine++
			f.closeBlock()
		case '-':
			if oldCount == 0 {
				return errors.New("more removed lines than the hunk header counts")
			}
			oldCount--
		case '+':
			if newCount == 0 {
				return errors.New("more added lines than the hunk header counts")
			}
			newCount--
			if f.noEOL {
				return errors.New("an added line after the file's last line")
			}
			f.add(newLine, line[1:])
			newLine++
			lastAdded = true
		case '\\': // "\ No newline at end of file" of the line before
			lastAdded = p.noNewline(lastAdded)
		default:
			return fmt.Errorf("%q in a hunk", truncate(line, 20))
		}
	}
	// The marker may follow the hunk's last line.
	if bytes.HasPrefix(p.peek(), []byte(`\`)) {
		p.next()
		p.noNewline(lastAdded)
	}
	f.closeBlock()
	return nil
}

// noNewline handles "\ No newline at end of file": when it follows an added
// line, that line has no "\n".
func (p *diffParser) noNewline(lastAdded bool) bool {
	if lastAdded {
		p.cur.dropNewline()
		p.cur.noEOL = true
	}
	return false
}

// add appends an added line at new-file line n.
func (f *fileState) add(n int, text []byte) {
	if f.blockLine == 0 {
		f.blockLine = n
	}
	f.added.Write(text)
	f.added.WriteByte('\n')
	f.addedSize += int64(len(text)) + 1
}

func (f *fileState) dropNewline() {
	if f.blockLine == 0 {
		return
	}
	s := f.added.String()
	f.added.Reset()
	f.added.WriteString(strings.TrimSuffix(s, "\n"))
	f.addedSize--
}

func (f *fileState) closeBlock() {
	if f.blockLine == 0 {
		return
	}
	f.blocks = append(f.blocks, Block{Line: f.blockLine, Text: f.added.String()})
	f.added.Reset()
	f.blockLine = 0
}

// finish ends the current file.
func (p *diffParser) finish() error {
	f := p.cur
	if f == nil {
		return nil
	}
	p.cur = nil
	if f.Path == "" {
		return errors.New("a file without a path")
	}
	f.closeBlock()
	out := f.File
	if !out.Binary {
		out.Added = f.blocks
		if f.newFile && !out.Deleted {
			out.Size = f.addedSize
		}
	}
	if out.Deleted {
		out.Added = nil
	}
	p.files = append(p.files, out)
	return nil
}

// binaryPatch reads git's binary patch after "GIT binary patch": the forward
// hunk ("literal <size>" or "delta <size>" and base85 lines up to an empty
// line), then the optional reverse hunk.
func (p *diffParser) binaryPatch() error {
	f := p.cur
	f.Binary = true
	kind, size, data, err := p.binaryHunk()
	if err != nil {
		return err
	}
	var content []byte
	switch kind {
	case "literal":
		f.Size = size
		content = data
	case "delta":
		// The delta starts with the source's and the target's sizes.
		_, n := uvarint(data)
		target, m := uvarint(data[max(n, 0):])
		if n <= 0 || m <= 0 {
			return errors.New("a binary delta without its sizes")
		}
		f.Size = int64(min(target, 1<<62))
		content = data[n+m:]
	}
	if len(content) > 0 && !f.Deleted {
		f.Added = []Block{{Line: 0, Text: string(content)}}
	}
	// The reverse hunk, when there is one: read and dropped.
	if l := p.peek(); bytes.HasPrefix(l, []byte("literal ")) || bytes.HasPrefix(l, []byte("delta ")) {
		if _, _, _, err := p.binaryHunk(); err != nil {
			return err
		}
	}
	return nil
}

// binaryHunk reads one hunk of a binary patch: its kind, the size in its
// header (the inflated data's) and its data, inflated (at most
// maxBinaryScan bytes of it).
func (p *diffParser) binaryHunk() (kind string, size int64, data []byte, err error) {
	head, ok := p.next()
	if !ok {
		return "", 0, nil, errors.New("a binary patch without a hunk")
	}
	kind, num, _ := strings.Cut(string(head), " ")
	if kind != "literal" && kind != "delta" {
		return "", 0, nil, fmt.Errorf("binary hunk %q", truncate(head, 20))
	}
	size, err = strconv.ParseInt(num, 10, 64)
	if err != nil || size < 0 {
		return "", 0, nil, fmt.Errorf("binary hunk size %q", num)
	}
	var packed []byte
	for {
		line, ok := p.next()
		if !ok || len(line) == 0 {
			break
		}
		if packed, err = decodeBase85Line(packed, line); err != nil {
			return "", 0, nil, err
		}
	}
	zr, err := zlib.NewReader(bytes.NewReader(packed))
	if err != nil {
		return "", 0, nil, fmt.Errorf("binary hunk: %w", err)
	}
	defer zr.Close()
	want := min(size, maxBinaryScan)
	data = make([]byte, 0, min(want, 1<<20))
	buf := bytes.NewBuffer(data)
	n, err := io.Copy(buf, io.LimitReader(zr, want))
	if err != nil {
		return "", 0, nil, fmt.Errorf("binary hunk: %w", err)
	}
	if n < want {
		return "", 0, nil, fmt.Errorf("binary hunk inflates to %d bytes, its header says %d", n, size)
	}
	return kind, size, buf.Bytes(), nil
}

// base85 is git's base85 alphabet (base85.c).
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

var base85Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(base85); i++ {
		t[base85[i]] = byte(i)
	}
	return t
}()

// decodeBase85Line appends the bytes of one line of a binary hunk: a length
// letter (A-Z: 1-26, a-z: 27-52) and 5 characters per 4 bytes.
func decodeBase85Line(dst, line []byte) ([]byte, error) {
	var n int
	switch c := line[0]; {
	case c >= 'A' && c <= 'Z':
		n = int(c-'A') + 1
	case c >= 'a' && c <= 'z':
		n = int(c-'a') + 27
	default:
		return nil, fmt.Errorf("binary hunk line %q", truncate(line, 20))
	}
	enc := line[1:]
	if len(enc) != (n+3)/4*5 {
		return nil, fmt.Errorf("binary hunk line of %d bytes has %d characters", n, len(enc))
	}
	for i := 0; i < len(enc); i += 5 {
		var v uint64
		for _, c := range enc[i : i+5] {
			d := base85Value[c]
			if d == 0xff {
				return nil, fmt.Errorf("binary hunk character %q", c)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, errors.New("binary hunk group out of range")
		}
		b := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		take := min(4, n)
		dst = append(dst, b[:take]...)
		n -= take
	}
	return dst, nil
}

// uvarint reads git's delta size varint (7 bits a byte, low first); n <= 0
// when b is too short.
func uvarint(b []byte) (v uint64, n int) {
	var shift uint
	for i, c := range b {
		if shift > 63 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, i + 1
		}
		shift += 7
	}
	return 0, 0
}

// hunkHeader parses "@@ -a[,b] +c[,d] @@…" into b, c, d (a count left out
// is 1).
func hunkHeader(s string) (oldCount, newStart, newCount int, err error) {
	rest, ok := strings.CutPrefix(s, "@@ -")
	if !ok {
		return 0, 0, 0, fmt.Errorf("hunk header %q", s)
	}
	old, rest, ok1 := strings.Cut(rest, " +")
	nw, _, ok2 := strings.Cut(rest, " @@")
	if !ok1 || !ok2 {
		return 0, 0, 0, fmt.Errorf("hunk header %q", truncate([]byte(s), 40))
	}
	_, oldCount, err1 := rangeOf(old)
	newStart, newCount, err2 := rangeOf(nw)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, 0, fmt.Errorf("hunk header %q: %w", truncate([]byte(s), 40), err)
	}
	if newStart == 0 && newCount > 0 {
		return 0, 0, 0, fmt.Errorf("hunk header %q: lines from line 0", truncate([]byte(s), 40))
	}
	return oldCount, newStart, newCount, nil
}

// rangeOf parses "start[,count]".
func rangeOf(s string) (start, count int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, errors.New("bad start")
	}
	count = 1
	if ok {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, errors.New("bad count")
		}
	}
	if start > 1<<40 || count > 1<<40 {
		return 0, 0, errors.New("out of range")
	}
	return start, count, nil
}

// gitHeaderPath reads the path of "diff --git a/P b/P" (quoted or not). A
// rename whose names hold " b/" cannot be split: its "rename to" line or
// its +++ line gives the path instead (path "").
func gitHeaderPath(rest string) (path string, prefixed bool) {
	if strings.HasPrefix(rest, `"`) {
		// "a/…" "b/…" or "a/…" b/…
		end := quotedEnd(rest)
		if end < 0 {
			return "", true
		}
		b := strings.TrimPrefix(rest[end:], " ")
		p, err := unquote(b)
		if err != nil {
			return "", true
		}
		return strings.TrimPrefix(p, "b/"), strings.HasPrefix(p, "b/")
	}
	if strings.HasSuffix(rest, `"`) {
		if i := strings.LastIndex(rest, ` "`); i >= 0 {
			p, err := unquote(rest[i+1:])
			if err == nil {
				return strings.TrimPrefix(p, "b/"), strings.HasPrefix(p, "b/")
			}
		}
		return "", true
	}
	// Unquoted: the two halves are the same path, but for their prefixes.
	if (len(rest)-1)%2 == 0 {
		n := (len(rest) - 1) / 2
		a, b := rest[:n], rest[n+1:]
		if rest[n] == ' ' {
			switch {
			case strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:]:
				return b[2:], true
			case a == b:
				return b, false
			}
		}
	}
	return "", strings.HasPrefix(rest, "a/")
}

// quotedEnd returns the index just past the closing quote of the C-quoted
// string s starts with, or -1.
func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// diffPath reads the path of a ---/+++ line: quoted or not, without a
// trailing tab and timestamp, without its "b/" when strip is set.
func diffPath(s string, strip bool) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		s, _, _ = strings.Cut(s, "\t")
		s = strings.TrimRight(s, " ")
	}
	p, err := unquote(s)
	if err != nil {
		return "", err
	}
	if p == "/dev/null" {
		return p, nil
	}
	if strip {
		p = strings.TrimPrefix(p, "b/")
	}
	if p == "" {
		return "", errors.New("an empty path")
	}
	return p, nil
}

// unquote undoes git's C-style quoting ("\303\244", "\t", "\"") of a path
// that starts with a quote; others are returned as they are.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	end := quotedEnd(s)
	if end < 0 {
		return "", fmt.Errorf("unterminated quoted path %q", truncate([]byte(s), 40))
	}
	p, err := strconv.Unquote(s[:end])
	if err != nil {
		return "", fmt.Errorf("quoted path %q: %w", truncate([]byte(s), 40), err)
	}
	return p, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
