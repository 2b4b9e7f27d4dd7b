package shipgate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// bigDiff is a 2,000-file branch diff: modified Go files (context, removed
// and added lines, some with words the patterns' keywords hold: "task-",
// "ASIA", "PRIVATE KEY"), new files, a few binaries and a few secrets.
func bigDiff(files int) []byte {
	var b strings.Builder
	for i := range files {
		path := fmt.Sprintf("pkg/mod%03d/file%04d.go", i%97, i)
		switch {
		case i%50 == 7:
			b.WriteString(binaryDiff(fmt.Sprintf("assets/img%04d.png", i), randomBytes(2000, uint64(i))))
		case i%5 == 0:
			var lines []string
			for j := range 60 {
				lines = append(lines, fmt.Sprintf("\tx%d := compute(ctx, %q, %d) // task-%d", j, "value", j*i, j))
			}
			if i%400 == 0 {
				lines[30] = "\ttoken := \"" + fakeGitHub + "\""
			}
			b.WriteString(newFileDiff(path, lines...))
		default:
			fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1234567..89abcde 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
			for h := range 3 {
				start := 10 + h*40
				fmt.Fprintf(&b, "@@ -%d,8 +%d,12 @@ func f%d() {\n", start, start+h*4, h)
				b.WriteString(" \tctx := context.Background()\n \tdefer cancel()\n")
				b.WriteString("-\told := legacy(ctx)\n-\treturn old\n")
				for k := range 6 {
					fmt.Fprintf(&b, "+\tv%d := service.Call(ctx, \"ASIA-pacific region %d\", opts) // PRIVATE KEY rotation\n", k, k)
				}
				b.WriteString(" \tif err != nil {\n \t\treturn err\n \t}\n \tlog.Info(\"done\")\n")
			}
			if i%333 == 0 {
				fmt.Fprintf(&b, "@@ -300,0 +310,1 @@\n+\tpassword := %q\n", projectSecret)
			}
		}
	}
	return []byte(b.String())
}

// BenchmarkCheckDiff is the gate on a 2,000-file diff: parse and check, with
// twenty configured secrets.
func BenchmarkCheckDiff(b *testing.B) {
	diff := bigDiff(2000)
	vals := []string{botToken, projectSecret}
	for i := range 18 {
		vals = append(vals, fmt.Sprintf("project-secret-%02d-%s", i, rnd(16, uint32(100+i))))
	}
	opts := shipgate.Options{Secrets: redact.New(vals...)}
	fs, err := shipgate.CheckDiff(diff, opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(fs) != 5+5 { // 5 tokens (new files, i%400 == 0), 5 secrets (modified files, i%333 == 0)
		b.Fatalf("%d findings: %v", len(fs), fs)
	}
	b.SetBytes(int64(len(diff)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := shipgate.CheckDiff(diff, opts); err != nil {
			b.Fatal(err)
		}
	}
}
