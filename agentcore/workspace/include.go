package workspace

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IncludeFile names the file of gitignore-style patterns (one a line) that
// choose which of the main clone's ignored files a new chat clone gets
// (.env, local config): the same name Claude Code's worktrees read.
const IncludeFile = ".worktreeinclude"

// Include copies into wt's clone the files of the main clone's working tree
// that git ignores and IncludeFile's patterns match: the IncludeFile of the
// main clone's refs/heads/<wt.Branch> (else of its base) as committed, else
// the main clone's own file. Tracked and merely untracked files are never
// copied, nor is a file the clone already has. Create and Fork call it;
// without IncludeFile it does nothing.
//
// The copies are made on wt's side, so that they belong to the agent's
// user like the rest of the clone: the bot reads the main clone's files
// and writes them as one patch of new files (executable or not, symbolic
// links as links), which git apply writes in the clone through wt.Agent.
// git apply refuses paths that leave the clone or pass through a symbolic
// link.
func (g *Git) Include(ctx context.Context, wt Worktree) error {
	if err := wt.check(); err != nil {
		return err
	}
	main := g.bot(wt.Main)
	start, err := main.refID(ctx, "refs/heads/"+wt.Branch)
	if err == nil && start == "" {
		start, err = main.refID(ctx, "refs/heads/"+wt.Base)
	}
	if err != nil {
		return err
	}
	return g.include(ctx, wt, start)
}

// include is Include with the patterns of commit start of the main clone.
func (g *Git) include(ctx context.Context, wt Worktree, start string) error {
	main := g.bot(wt.Main)
	patterns, err := includePatterns(ctx, main, start)
	if err != nil || patterns == "" {
		return err
	}
	files, err := includedFiles(ctx, main, patterns)
	if err != nil || len(files) == 0 {
		return err
	}
	var todo []string
	for _, f := range files {
		if !filepath.IsLocal(f) {
			return fmt.Errorf("path %q leaves the clone", f)
		}
		if _, err := os.Lstat(filepath.Join(wt.Dir, f)); errors.Is(err, fs.ErrNotExist) {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	format, err := main.run(ctx, "rev-parse", "--show-object-format")
	if err != nil {
		return err
	}
	chat, err := g.chat(wt)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeNewFiles(pw, wt.Main, todo, format)) }()
	defer pr.Close()
	if _, err := chat.exec(ctx, call{args: []string{"apply", "--whitespace=nowarn", "-"}, stdin: pr}); err != nil {
		return fmt.Errorf("copying the %s files into the clone: %w", IncludeFile, err)
	}
	return nil
}

// includePatterns is the content of the IncludeFile of commit start of
// main, else of main's working tree, written to a temporary file of the
// bot's whose path it returns ("" when there is none; includedFiles
// removes it).
func includePatterns(ctx context.Context, main repo, start string) (string, error) {
	var text []byte
	if start != "" {
		out, err := main.exec(ctx, call{args: []string{"cat-file", "blob", start + ":" + IncludeFile}})
		if err == nil {
			text = out
		}
	}
	if text == nil {
		p := filepath.Join(main.dir, IncludeFile)
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			return "", nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		text = b
	}
	tmp, err := os.CreateTemp("", "threadline-include-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(text); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// includedFiles lists main's untracked files that match the patterns file
// (which it removes), then keeps those git ignores.
func includedFiles(ctx context.Context, main repo, patterns string) ([]string, error) {
	defer os.Remove(patterns)
	out, err := main.exec(ctx, call{args: []string{
		"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + patterns,
	}})
	if err != nil || len(out) == 0 {
		return nil, err
	}
	out, err = main.exec(ctx, call{args: []string{"check-ignore", "-z", "--stdin"}, stdin: bytes.NewReader(out)})
	if ge, ok := errors.AsType[*GitError](err); ok && ge.Code == 1 && ge.Err == nil {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, err
	}
	return splitNUL(string(out)), nil
}

// writeNewFiles writes to w a git patch that creates files (paths relative
// to root) with their content: binary literal hunks with full object ids
// (computed in format, "sha1" or "sha256"), which git apply requires and
// checks. Regular files and symbolic links are written; anything else is
// skipped.
func writeNewFiles(w io.Writer, root string, files []string, format string) error {
	bw := bufio.NewWriter(w)
	for _, rel := range files {
		fi, err := os.Lstat(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		var content []byte
		var mode string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(root, rel))
			if err != nil {
				return err
			}
			content, mode = []byte(target), "120000"
		case fi.Mode().IsRegular():
			if content, err = os.ReadFile(filepath.Join(root, rel)); err != nil {
				return err
			}
			mode = "100644"
			if fi.Mode()&0o111 != 0 {
				mode = "100755"
			}
		default:
			continue
		}
		if err := writeNewFile(bw, filepath.ToSlash(rel), mode, content, format); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeNewFile writes the patch of one new file.
func writeNewFile(w io.Writer, path, mode string, content []byte, format string) error {
	var h hash.Hash = sha1.New()
	if format == "sha256" {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	id := hex.EncodeToString(h.Sum(nil))
	fmt.Fprintf(w, "diff --git %s %s\nnew file mode %s\nindex %s..%s\n",
		quotePath("a/"+path), quotePath("b/"+path), mode, strings.Repeat("0", len(id)), id)
	if len(content) == 0 {
		return nil
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(content)
	if err := zw.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "GIT binary patch\nliteral %d\n", len(content))
	data := z.Bytes()
	for len(data) > 0 {
		n := min(len(data), 52)
		line := []byte{lineLength(n)}
		line = encode85(line, data[:n])
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
		data = data[n:]
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// lineLength is the length byte of a line of a git binary patch: 'A' to
// 'Z' for 1 to 26 bytes, 'a' to 'z' for 27 to 52.
func lineLength(n int) byte {
	if n <= 26 {
		return byte('A' + n - 1)
	}
	return byte('a' + n - 27)
}

// en85 is git's base-85 alphabet.
const en85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// encode85 appends data in git's base 85 (each 4 bytes, the last group
// padded with zeros, as 5 characters) to dst.
func encode85(dst, data []byte) []byte {
	for len(data) > 0 {
		var acc uint32
		for i := range 4 {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var group [5]byte
		for i := 4; i >= 0; i-- {
			group[i] = en85[acc%85]
			acc /= 85
		}
		dst = append(dst, group[:]...)
		data = data[min(4, len(data)):]
	}
	return dst
}

// quotePath is path as git writes it in a patch header: as it is, or in
// double quotes with C escapes when it holds a quote, a backslash, a
// control character or a byte outside ASCII.
func quotePath(path string) string {
	needs := false
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return path
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitNUL splits git's -z output.
func splitNUL(s string) []string {
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
