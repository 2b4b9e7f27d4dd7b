// Tests of the relay journal's scrubbing and of the relay directory's modes.

package procrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

// Secret values of the scrubbing tests: a project-like secret with characters
// that JSON escapes, and a bot token.
const (
	trickySecret = `pa"ss<wörd>-9Xq`
	botToken     = "xoxb-bot-token-8675309"
)

// secretsChild prints the secrets raw, in three JSON escapings and split
// across two writes, then a terminal line.
func secretsChild() int {
	w := os.Stdout
	w.WriteString("plain text with " + trickySecret + " inside\n")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]string{"text": "js: " + trickySecret}) // as JSON.stringify writes it
	w.Write(b.Bytes())
	m, _ := json.Marshal(map[string]string{"text": "go: " + trickySecret + " and " + botToken})
	w.Write(append(m, '\n'))
	w.WriteString(`{"text":"ascii: pa\"ss<w\u00f6rd>-9Xq"}` + "\n")
	w.WriteString(`{"text":"split: ` + botToken[:7])
	time.Sleep(50 * time.Millisecond) // the relay sees half a line first
	w.WriteString(botToken[7:] + `"}` + "\n")
	w.WriteString(`{"type":"done"}` + "\n")
	return 0
}

func TestRelayJournalScrubbed(t *testing.T) {
	r := testRelay(t)
	r.Mask = []string{botToken, trickySecret}
	rr := r.Run("scrubbed")
	p, err := Start(WithRelay(t.Context(), rr), nil, childSpec(t, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	journal, err := os.ReadFile(filepath.Join(r.RunDir("scrubbed"), relayOut))
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range append(jsonForms(trickySecret), trickySecret, botToken, "8675309", "wörd", `w\u00f6rd`) {
		if bytes.Contains(journal, []byte(form)) {
			t.Errorf("the journal holds %q:\n%s", form, journal)
		}
	}
	want := []string{
		"plain text with " + redact.Mask + " inside",
		`{"text":"js: ` + redact.Mask + `"}`,
		`{"text":"go: ` + redact.Mask + ` and ` + redact.Mask + `"}`,
		`{"text":"ascii: ` + redact.Mask + `"}`,
		`{"text":"split: ` + redact.Mask + `"}`,
		`{"type":"done"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got[1:] {
		if !json.Valid([]byte(l)) {
			t.Errorf("a scrubbed line is no longer JSON: %s", l)
		}
	}
}

func TestCopyScrubbedLongLine(t *testing.T) {
	s := newScrubber([]string{"s3cr3t-value"})
	// A line longer than MaxLineBytes with the secret across every 64 KiB
	// read boundary and at the ends.
	var in bytes.Buffer
	in.WriteString("s3cr3t-value")
	for in.Len() < MaxLineBytes+200<<10 {
		pad := 64<<10 - in.Len()%(64<<10) - 6
		if pad < 0 {
			pad += 64 << 10
		}
		in.WriteString(strings.Repeat("x", pad))
		in.WriteString("s3cr3t-value")
	}
	in.WriteString("\nshort s3cr3t-value line\nlast s3cr3t-value")
	var out bytes.Buffer
	if err := copyScrubbed(&out, bytes.NewReader(in.Bytes()), s); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("s3cr3t")) || bytes.Contains(out.Bytes(), []byte("3t-val")) {
		t.Error("a secret survived in a long line")
	}
	n := bytes.Count(in.Bytes(), []byte("s3cr3t-value"))
	if got := bytes.Count(out.Bytes(), []byte(redact.Mask)); got != n {
		t.Errorf("%d masks, want %d", got, n)
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("\nshort "+redact.Mask+" line\nlast "+redact.Mask)) {
		t.Errorf("tail %q", out.Bytes()[out.Len()-40:])
	}
	// Nothing to mask: a plain copy.
	out.Reset()
	if err := copyScrubbed(&out, strings.NewReader("a\nb"), newScrubber([]string{"abc"})); err != nil || out.String() != "a\nb" {
		t.Errorf("short values are not masked: %q %v", out.String(), err)
	}
}

// TestRelayDirModes: whatever the umask, the relay tree is private.
func TestRelayDirModes(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	base, err := os.MkdirTemp("", "tlm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r := testRelay(t)
	r.Dir = filepath.Join(base, "st", "rl")
	rr := r.Run("m")
	p, err := Start(WithRelay(t.Context(), rr), nil, slowSpec(t, 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	run := r.RunDir("m")
	checkModes(t, map[string]os.FileMode{
		filepath.Join(base, "st"): 0o700, r.Dir: 0o700, run: 0o700,
		filepath.Join(run, relaySock): 0o600, filepath.Join(run, relayOut): 0o600, filepath.Join(run, relayLog): 0o600,
	})
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModes(t, map[string]os.FileMode{filepath.Join(run, relayExit): 0o600, filepath.Join(run, relayMeta): 0o600})
}

func checkModes(t *testing.T, want map[string]os.FileMode) {
	t.Helper()
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %o, want %o", path, fi.Mode().Perm(), mode)
		}
	}
}
