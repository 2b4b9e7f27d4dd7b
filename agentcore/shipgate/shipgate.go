package shipgate

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultMaxSize is the largest file a push may carry unless Options say
// otherwise: 5 MiB.
const DefaultMaxSize = 5 << 20

// Secrets hides configured secret values: String returns s with each one
// replaced, and s itself (unchanged) when it holds none. A
// *redact.Redactor is one.
type Secrets interface {
	String(s string) string
}

// Options configure Check.
type Options struct {
	// Secrets are the configured secret values (bot tokens, project
	// secrets); nil: none.
	Secrets Secrets
	// MaxSize is the largest file allowed, in bytes: 0 means
	// DefaultMaxSize, a negative value no limit.
	MaxSize int64
	// Patterns replace the table of Patterns when not nil.
	Patterns []Pattern
}

// File is one changed file of a push: what it adds and how large it is.
type File struct {
	// Path is the file's path in the new tree (its old path if Deleted).
	Path string
	// Deleted reports a file the change removes: it adds nothing.
	Deleted bool
	// Binary reports content that is not text; its findings have no line.
	Binary bool
	// Size is the size of the new content in bytes, or -1 when unknown.
	// When unknown, a text file counts by what it adds (a lower bound) and
	// a binary file is RuleUnknownSize.
	Size int64
	// Added is the added content: runs of consecutive added lines, or a
	// binary file's content.
	Added []Block
}

// Block is a run of consecutive added lines of a file.
type Block struct {
	// Line is the new-file line number of Text's first line, from 1; 0 for
	// a binary file's content.
	Line int
	// Text is the lines, each ending in "\n" but maybe the file's last.
	Text string
}

// NewFile returns the File of a whole file with its new content: all of it
// added, Binary when it looks like git's binary (a NUL byte in its first
// 8000 bytes).
func NewFile(path string, content []byte) File {
	f := File{Path: path, Size: int64(len(content))}
	f.Binary = bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0
	if len(content) > 0 {
		line := 1
		if f.Binary {
			line = 0
		}
		f.Added = []Block{{Line: line, Text: string(content)}}
	}
	return f
}

// Finding is one reason not to push.
type Finding struct {
	// File is the file's path.
	File string
	// Line is the line in the new file, from 1; 0 for a finding about the
	// whole file or a binary file's content.
	Line int
	// Rule is the rule broken.
	Rule Rule
	// Reason says it in plain words ("holds a GitHub token").
	Reason string
	// Excerpt is the line with every secret in it masked (configured values
	// by "[redacted]", pattern matches by "[<rule>]"), shortened; empty for
	// whole-file and binary findings. It never holds a secret the gate
	// recognises.
	Excerpt string
}

// String is the finding as one line: "path:line: reason (rule): excerpt".
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d", f.Line)
	}
	fmt.Fprintf(&b, ": %s (%s)", f.Reason, f.Rule)
	if f.Excerpt != "" {
		b.WriteString(": ")
		b.WriteString(f.Excerpt)
	}
	return b.String()
}

// CheckDiff parses a unified diff (ParseDiff) and checks it (Check).
func CheckDiff(diff []byte, opts Options) ([]Finding, error) {
	files, err := ParseDiff(diff)
	if err != nil {
		return nil, err
	}
	return Check(files, opts), nil
}

// Check returns the findings of files, sorted by file, line and rule; none
// means the push may go.
func Check(files []File, opts Options) []Finding {
	c := checker{opts: opts, patterns: opts.Patterns}
	if c.patterns == nil {
		c.patterns = patterns
	}
	if c.opts.MaxSize == 0 {
		c.opts.MaxSize = DefaultMaxSize
	}
	for i := range files {
		c.file(&files[i])
	}
	slices.SortStableFunc(c.out, func(a, b Finding) int {
		if n := strings.Compare(a.File, b.File); n != 0 {
			return n
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(string(a.Rule), string(b.Rule))
	})
	return c.out
}

type checker struct {
	opts     Options
	patterns []Pattern
	out      []Finding
}

func (c *checker) file(f *File) {
	if f.Deleted {
		return
	}
	var added int64
	for _, b := range f.Added {
		added += int64(len(b.Text))
		c.block(f, b)
	}
	size := max(f.Size, added)
	switch {
	case c.opts.MaxSize > 0 && size > c.opts.MaxSize:
		c.out = append(c.out, Finding{File: f.Path, Rule: RuleSizeLimit,
			Reason: fmt.Sprintf("is %s, over the %s limit", human(size), human(c.opts.MaxSize))})
	case f.Binary && f.Size < 0:
		c.out = append(c.out, Finding{File: f.Path, Rule: RuleUnknownSize,
			Reason: "is a binary file whose size the diff does not give (make it with git diff --binary)"})
	}
}

// block adds the findings of one block of f.
func (c *checker) block(f *File, b Block) {
	text := b.Text
	hasSecret := c.opts.Secrets != nil && c.opts.Secrets.String(text) != text
	ms := findPatterns(text, c.patterns)
	if !hasSecret && len(ms) == 0 {
		return
	}
	binary := f.Binary || b.Line == 0
	// Walk the lines that hold a secret or a match.
	mi := 0
	line := b.Line
	for start := 0; start < len(text); line++ {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start + 1
		}
		s := text[start:end]
		var rules []lineMatch
		for mi < len(ms) && ms[mi].start < end {
			rules = append(rules, lineMatch{ms[mi].start - start, ms[mi].end - start, ms[mi].p})
			mi++
		}
		secret := hasSecret && c.opts.Secrets.String(s) != s
		if secret || len(rules) > 0 {
			c.line(f.Path, line, binary, s, secret, rules)
		}
		if !hasSecret && mi == len(ms) {
			break
		}
		start = end
	}
}

// lineMatch is a pattern match in a line, its offsets relative to the
// line's start (a match running on past the line ends after it).
type lineMatch struct {
	start, end int
	p          *Pattern
}

// line adds the findings of one line.
func (c *checker) line(path string, n int, binary bool, s string, secret bool, ms []lineMatch) {
	if binary {
		n = 0
	}
	excerpt := ""
	if !binary {
		excerpt = c.excerpt(s, ms)
	}
	if secret {
		c.out = append(c.out, Finding{File: path, Line: n, Rule: RuleSecretValue,
			Reason: "holds the value of a configured secret", Excerpt: excerpt})
	}
	for _, m := range ms {
		c.out = append(c.out, Finding{File: path, Line: n, Rule: m.p.Rule,
			Reason: "holds " + m.p.Description, Excerpt: excerpt})
	}
}

// maxExcerpt bounds an excerpt, in bytes.
const maxExcerpt = 120

// excerpt returns the line with pattern matches replaced by "[rule]" and
// configured secrets by the Secrets' mask, spaces collapsed, shortened to
// maxExcerpt bytes around the first mask.
func (c *checker) excerpt(s string, ms []lineMatch) string {
	var b strings.Builder
	i := 0
	for _, m := range ms { // sorted, without overlaps
		if m.start < i {
			continue
		}
		b.WriteString(s[i:m.start])
		b.WriteString("[" + string(m.p.Rule) + "]")
		i = min(m.end, len(s))
	}
	b.WriteString(s[i:])
	out := b.String()
	if c.opts.Secrets != nil {
		out = c.opts.Secrets.String(out)
	}
	out = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(out, "?"))
	out = strings.Join(strings.Fields(out), " ")
	return shorten(out, maxExcerpt)
}

// shorten cuts s to about n bytes on rune boundaries, around the first mask
// ("[") when the line is longer, marking the cuts with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	at := max(strings.IndexByte(s, '['), 0)
	from := max(0, at-n/3)
	to := min(len(s), from+n)
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to--
	}
	out := s[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

// HumanSize formats a byte count as the gate's findings do: "5 MB",
// "7.3 MB", "512 KB", "12 B" (MB = 2^20 bytes).
func HumanSize(n int64) string { return human(n) }

// human formats a byte count: "5 MB", "7.3 MB", "512 KB", "12 B" (MB =
// 2^20 bytes).
func human(n int64) string {
	switch {
	case n >= 1<<20:
		s := fmt.Sprintf("%.1f", float64(n)/(1<<20))
		return strings.TrimSuffix(s, ".0") + " MB"
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
