package threadtools

import (
	"mime"
	"net/http"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxName bounds a cleaned name, in bytes (a file-system name's limit).
const maxName = 255

// CleanName returns name fit to post and to create as one file: control and
// formatting characters (a right-to-left override included), "/" and "\"
// become "_", invalid UTF-8 becomes "?", surrounding spaces go, and an empty
// name, "." or ".." becomes "file"; at most 255 bytes, keeping the
// extension.
func CleanName(name string) string {
	name = strings.ToValidUTF8(name, "?")
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
			r == '\u2028' || r == '\u2029' {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	if len(name) > maxName {
		ext := filepath.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxName-len(ext)]
		for len(stem) > 0 && !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	return name
}

// mimeType guesses the type of content called name: the type sniffed from
// the content unless that says only "some bytes" or "some text" and the
// extension knows better.
func mimeType(name string, content []byte) string {
	sniffed := http.DetectContentType(content)
	if sniffed != "application/octet-stream" && !strings.HasPrefix(sniffed, "text/plain") {
		return sniffed
	}
	if byExt := mime.TypeByExtension(filepath.Ext(name)); byExt != "" {
		return byExt
	}
	return sniffed
}
