package configs_test

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/configs"
)

// instruction is one Containerfile instruction, its continuation lines joined.
type instruction struct {
	cmd, args string
	stage     int // index of the FROM it follows
}

// parseContainerfile reads the instructions of a Containerfile: comments and
// blank lines dropped, lines ending in \ joined to the next.
func parseContainerfile(t *testing.T, file string) []instruction {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	stage := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.Len() > 0 {
		t.Fatalf("the last instruction ends in a continuation: %q", cur.String())
	}
	return out
}

// final returns the instructions of the last stage with cmd.
func final(ins []instruction, cmd string) []instruction {
	last := ins[len(ins)-1].stage
	var out []instruction
	for _, in := range ins {
		if in.stage == last && in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes a JSON-array instruction argument (CMD ["a", "b"]).
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	args := in.args
	if in.cmd == "HEALTHCHECK" {
		_, args, _ = strings.Cut(args, "CMD ")
	}
	var v []string
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatalf("%s %s: not the exec form: %v", in.cmd, in.args, err)
	}
	return v
}

// TestContainerfile checks the image statically (no builder here can fetch
// its base images): the final stage has a supported Node for the pinned
// Claude Code, a CA bundle, a non-root bot user and a separate agent user
// that the image's config isolates agents as (with the capabilities to switch
// to it), EXPOSEs only the port its config's public http.listen serves, and
// its health check reads http.admin_listen; the build stage's Go is the
// module's; the config it ships loads.
func TestContainerfile(t *testing.T) {
	ins := parseContainerfile(t, "Containerfile")
	if len(ins) == 0 || ins[0].cmd != "FROM" {
		t.Fatal("no FROM first")
	}

	// Go of the build stage: the module's go directive, major.minor.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVer == nil || !strings.HasPrefix(ins[0].args, "golang:"+string(goVer[1])+"-") {
		t.Errorf("build stage %q, want golang:%s-…", ins[0].args, goVer[1])
	}

	// Node: at least what Claude Code declares, and Claude Code at the version pinned in package.json.
	froms := final(ins, "FROM")
	m := regexp.MustCompile(`^node:(\d+)-`).FindStringSubmatch(froms[0].args)
	if m == nil {
		t.Fatalf("final stage %q is not a node image", froms[0].args)
	}
	node, _ := strconv.Atoi(m[1])
	need := 22 // @anthropic-ai/claude-code 2.x: "engines": {"node": ">=22.0.0"}
	if b, err := os.ReadFile("../node_modules/@anthropic-ai/claude-code/package.json"); err == nil {
		var pkg struct {
			Engines struct{ Node string } `json:"engines"`
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`>=\s*(\d+)`).FindStringSubmatch(pkg.Engines.Node); m != nil {
			need, _ = strconv.Atoi(m[1])
		}
	}
	if node < need {
		t.Errorf("Node %d in the image; Claude Code needs >= %d", node, need)
	}
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if b, err := os.ReadFile("../package.json"); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &pinned); err != nil {
		t.Fatal(err)
	}
	want := "CLAUDE_CODE_VERSION=" + pinned.Dependencies["@anthropic-ai/claude-code"]
	if !slices.ContainsFunc(final(ins, "ARG"), func(in instruction) bool { return in.args == want }) {
		t.Errorf("no ARG %s (package.json's pin)", want)
	}

	var run strings.Builder
	for _, in := range final(ins, "RUN") {
		run.WriteString(in.args + "\n")
	}
	runs := run.String()
	if !regexp.MustCompile(`apt-get install [^\n&]*\bca-certificates\b`).MatchString(runs) {
		t.Error("the final stage installs no CA bundle (ca-certificates)")
	}
	if !strings.Contains(runs, "npm install -g @anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}") {
		t.Error("Claude Code is not installed at CLAUDE_CODE_VERSION")
	}

	// Users: the bot is not root; the agent user is another user, created.
	users := final(ins, "USER")
	if len(users) == 0 {
		t.Fatal("no USER: the bot would run as root")
	}
	bot := users[len(users)-1].args
	if bot == "root" || bot == "0" || strings.HasPrefix(bot, "0:") {
		t.Errorf("USER %s", bot)
	}
	created := regexp.MustCompile(`useradd [^&\n]*?(\S+)\s*(?:&&|$|\n)`).FindAllStringSubmatch(runs, -1)
	var names []string
	for _, c := range created {
		names = append(names, c[1])
	}
	if !slices.Contains(names, bot) {
		t.Errorf("USER %s is not created (useradd makes %v)", bot, names)
	}

	// The image's config: copied to the path CMD loads, and it loads.
	var cmd []string
	if cmds := final(ins, "CMD"); len(cmds) > 0 {
		cmd = execForm(t, cmds[len(cmds)-1])
	}
	i := slices.Index(cmd, "--config")
	if i < 0 || i+1 >= len(cmd) || cmd[0] != "serve" {
		t.Fatalf("CMD %q: not serve --config FILE", cmd)
	}
	var src string
	for _, in := range final(ins, "COPY") {
		if f := strings.Fields(in.args); len(f) == 2 && f[1] == cmd[i+1] {
			src = f[0]
		}
	}
	if src != "configs/container.yaml" {
		t.Fatalf("%s comes from %q, want configs/container.yaml", cmd[i+1], src)
	}
	t.Setenv("SLACK_APP_TOKEN", "xapp-1-test")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	cfg, err := configs.Load("container.yaml")
	if err != nil {
		t.Fatalf("the image's config: %v", err)
	}

	// Isolation: the sandbox, and no privilege an agent could take. The
	// binary an agent may execute carries no file capability and nothing
	// is made set-uid (an approved tool ran `threadline relay` as root when
	// the image gave the binary cap_setuid).
	if cfg.Host.Isolation != configs.IsolationSandbox {
		t.Errorf("host.isolation %q: the image runs agents sandboxed (its bot may not switch users)", cfg.Host.Isolation)
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`\bsetcap\b`), regexp.MustCompile(`chmod [^\n&]*[ug]\+s`), regexp.MustCompile(`chmod [^\n&]*\b[2467][0-7]{3}\b`)} {
		if bad.MatchString(runs) {
			t.Errorf("the image grants a privilege by file (%s):\n%s", bad, runs)
		}
	}

	// EXPOSE: only ports the config's http.listen serves from outside.
	_, listenPort, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatalf("http.listen %q: %v", cfg.HTTP.Listen, err)
	}
	listenHost, _, _ := net.SplitHostPort(cfg.HTTP.Listen)
	if ip := net.ParseIP(listenHost); listenHost == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("http.listen %s is loopback: nothing EXPOSEd could reach it", cfg.HTTP.Listen)
	}
	for _, in := range final(ins, "EXPOSE") {
		for _, p := range strings.Fields(in.args) {
			if strings.TrimSuffix(p, "/tcp") != listenPort {
				t.Errorf("EXPOSE %s: http.listen is %s", p, cfg.HTTP.Listen)
			}
		}
	}
	// The health check reads /healthz where the config serves it.
	hc := final(ins, "HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("HEALTHCHECK: %d", len(hc))
	}
	ls, err := cfg.HTTP.Listeners(false)
	if err != nil {
		t.Fatal(err)
	}
	admin := ""
	for _, l := range ls {
		if l.Admin {
			admin = l.Addr
		}
	}
	if probe := strings.Join(execForm(t, hc[0]), " "); admin == "" || !strings.Contains(probe, "http://"+admin+"/healthz") {
		t.Errorf("HEALTHCHECK %q does not read http://%s/healthz", probe, admin)
	}
}

// TestDockerignore: the build context leaves out what is not source (the
// git history, installed CLIs, caches, built binaries and test binaries, a
// local config and database) and keeps what the build copies.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	// Docker's rules: a pattern matches the path from the context's root (*
	// and ? within a name, ** across names); one that matches a directory
	// leaves out all below it; a later !pattern brings a path back.
	match := func(pat, p string) bool {
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(pat); i++ {
			switch {
			case strings.HasPrefix(pat[i:], "**"):
				re.WriteString(".*")
				i++
			case pat[i] == '*':
				re.WriteString("[^/]*")
			case pat[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(pat[i : i+1]))
			}
		}
		re.WriteString("$")
		r := regexp.MustCompile(re.String())
		for q := p; q != "." && q != "/"; q = path.Dir(q) {
			if r.MatchString(q) {
				return true
			}
		}
		return false
	}
	ignored := func(p string) bool {
		out := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			if match(strings.TrimPrefix(pat, "!"), p) {
				out = !neg
			}
		}
		return out
	}
	for _, p := range []string{".git/HEAD", "node_modules/.bin/claude", ".cache/dendrite/bin", "threadline", "cmd/threadline/threadline", "agentcore/procrun/procrun.test", "threadline.yaml", "data/threadline.db"} {
		if !ignored(p) {
			t.Errorf("%s is in the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/threadline/main.go", "store/migrations/sqlite/0001_init.sql", "configs/container.yaml", "configs/Containerfile"} {
		if ignored(p) {
			t.Errorf("%s is left out of the build context, and the build needs it", p)
		}
	}
}
