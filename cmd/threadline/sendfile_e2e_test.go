package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// buildThreadlineMCP builds cmd/threadline-mcp for the test and makes runs
// use it (as an installed one beside the executable would be), in a
// directory the agent user may pass through.
func buildThreadlineMCP(t *testing.T) {
	t.Helper()
	bin := filepath.Join(procruntest.TraversableDir(t, "tlmcp"), "threadline-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, "../threadline-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build threadline-mcp: %v\n%s", err, out)
	}
	old := mcpBinary
	mcpBinary = bin
	t.Cleanup(func() { mcpBinary = old })
}

// claudeSlackConfig is the config of serve with the Slack fake and the
// Claude CLI bin against api (its home under dir), secret a configured one
// (agents.claude.env SERVICE_API_KEY), and channel C1 as c1 says; a failed
// test logs the requests the model got.
func claudeSlackConfig(t *testing.T, bin string, api *fakeapi.Server, dir, secret string, c1 map[string]any) (*slacktest.Server, string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range api.MessageRequests() {
				t.Logf("model request %d:\n%s", i, r.Transcript())
			}
		}
	})
	env := api.ClaudeEnv(filepath.Join(dir, "claude-home"))
	env["SERVICE_API_KEY"] = secret
	fake := slacktest.New(t)
	return fake, slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"agents": map[string]any{"claude": map[string]any{"bin": bin, "env": env}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": c1}},
	})
}

// sendFileScript is the model of the test: it writes the files with Bash,
// then calls send_file for the PNG, the file holding the secret and the
// link out of the workspace, one call per request (counted by the tool
// results the conversation holds so far), then ends the turn.
func sendFileScript(pngB64 string) fakeapi.Script {
	calls := []fakeapi.ReplyBlock{
		{Type: "tool_use", Name: "Bash", Input: map[string]any{"description": "Write the files",
			"command": "echo " + pngB64 + " | base64 -d > chart.png && printf 'key=%s\\n' \"$SERVICE_API_KEY\" > notes.txt && ln -s /etc/passwd link.png && echo wrote-files"}},
		{Type: "tool_use", Name: "mcp__threadline__send_file", Input: map[string]any{"path": "chart.png", "title": "The chart"}},
		{Type: "tool_use", Name: "mcp__threadline__send_file", Input: map[string]any{"path": "notes.txt"}},
		{Type: "tool_use", Name: "mcp__threadline__send_file", Input: map[string]any{"path": "link.png"}},
	}
	return func(req *fakeapi.Request) *fakeapi.Reply {
		n := 0
		for _, m := range req.Body.Messages {
			n += len(m.ToolResults())
		}
		if n >= len(calls) {
			return fakeapi.TextReply("Sent what I could.")
		}
		call := calls[n]
		call.ID = fmt.Sprintf("toolu_send%02d", n)
		return &fakeapi.Reply{Blocks: []fakeapi.ReplyBlock{{Type: "text", Chunks: []string{"Step ", fmt.Sprint(n), "."}}, call}}
	}
}

// TestSendFileEndToEnd: `threadline serve` with the Slack fake and the real
// Claude CLI (against the scripted API fake, in a loopback-only network
// namespace), given Threadline's MCP server (threadline-mcp, built for the
// test). The model writes a PNG, a file holding a configured secret and a
// link to /etc/passwd with Bash (approved on its card), then calls
// mcp__threadline__send_file for each (each approved on its card): the PNG
// is uploaded in the thread byte for byte; the other two come back to the
// model as tool errors, each is said in one line in the thread, and
// nothing else is uploaded.
func TestSendFileEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	buildThreadlineMCP(t)
	dir := isolate(t)
	const secret = "sk-send-4Rt8Yp2Qw6Zx1Lm3"
	pngBytes := providertest.PNG(t)
	api := fakeapi.New(t, fakeapi.When("SEND", sendFileScript(base64.StdEncoding.EncodeToString(pngBytes))))
	fake, cfgPath := claudeSlackConfig(t, bin, api, dir, secret, map[string]any{"agent": "claude", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}})
	s := startServe(t, fake, cfgPath)
	defer s.stop()

	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> SEND me the chart"})
	s.mention("EvS1", root, "", "SEND me the chart")
	s.approve(root, "wrote-files")
	s.approve(root, "chart.png")
	chatopstest.WaitFor(t, "the chart's upload", func() bool { return len(fake.Files()) > 0 })
	s.approve(root, "notes.txt")
	s.notice(root, "Not sent: notes.txt")
	s.approve(root, "link.png")
	s.notice(root, "Not sent: link.png")
	s.answer(root, 1)

	files := fake.Files()
	if len(files) != 1 {
		t.Fatalf("uploads: %+v, want the chart alone", files)
	}
	f := files[0]
	if f.Name != "chart.png" || f.Channel != "C1" || f.ThreadTS != root || !bytes.Equal(f.Content, pngBytes) {
		t.Errorf("upload %s in %s/%s (%d bytes), want chart.png in C1/%s, %d bytes the same", f.Name, f.Channel, f.ThreadTS, len(f.Content), root, len(pngBytes))
	}
	// The model got the sent file's facts, then two tool errors saying why.
	var results []string
	for _, r := range api.MessageRequests() {
		for _, b := range r.ToolResults() {
			label := "ok: "
			if b.IsError {
				label = "error: "
			}
			results = append(results, label+b.ResultText())
		}
	}
	got := strings.Join(results, "\n")
	if len(results) != 4 || !strings.HasPrefix(results[1], "ok: ") || !strings.Contains(results[1], "chart.png") ||
		!strings.HasPrefix(results[2], "error: ") || !strings.Contains(results[2], "refused") ||
		!strings.HasPrefix(results[3], "error: ") || !strings.Contains(results[3], "refused") {
		t.Errorf("tool results the model got:\n%s", got)
	}
	for i, r := range api.Requests() {
		if strings.Contains(string(r.Raw), secret) {
			t.Errorf("model request %d (%s) holds the secret", i, r.Path)
		}
	}
	for _, m := range fake.Thread("C1", root) {
		if strings.Contains(string(m.Blocks)+m.Text+m.Markdown, secret) {
			t.Errorf("the thread shows the secret: %+v", m)
		}
	}

	// The chat log holds each post and refusal, and the audit lists them.
	s.stop()
	code, out, errOut, err := run(t, "", "audit", "--config", cfgPath)
	if code != 0 || err != nil {
		t.Fatalf("audit: exit %d, %v\n%s", code, err, errOut)
	}
	sum := sha256.Sum256(pngBytes)
	for _, want := range []string{"file.sent", "Sent chart.png to the thread", hex.EncodeToString(sum[:]), "file.refused", "Not sent: notes.txt", "Not sent: link.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit lacks %q:\n%s", want, out)
		}
	}
}

// writeFilesCommand is the command that writes the PNG, a file holding
// $SERVICE_API_KEY and a link to /etc/passwd, and says wrote-files.
func writeFilesCommand(png []byte) string {
	return "echo " + base64.StdEncoding.EncodeToString(png) +
		" | base64 -d > chart.png && printf 'key=%s\\n' \"$SERVICE_API_KEY\" > notes.txt && ln -s /etc/passwd link.png && echo wrote-files"
}

// sendFileTurns runs serve (in dir, isolate's) with the Slack fake and agent id configured as
// cfg (its env given SERVICE_API_KEY=secret) and the rest of the config as
// override says (slackConfigFile), and drives the turns whose
// prompts the model's script answers: WRITE (writeFilesCommand, approved on
// its card), then PNG, NOTES and LINK (a send_file each; askSend: its
// approval answered on its card). The PNG must arrive in the thread byte
// for byte, the other two must be said refused, nothing else uploaded.
// transcripts are the model's requests, logged when the test failed.
func sendFileTurns(t *testing.T, dir, id string, cfg map[string]any, secret string, png []byte, askSend bool, transcripts func() []string, override ...map[string]any) {
	t.Helper()
	cfg["env"].(map[string]string)["SERVICE_API_KEY"] = secret
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, append([]map[string]any{{
		"agents": map[string]any{id: cfg},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": id, "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}}},
	}}, override...)...)
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	var root string
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range fake.Thread("C1", root) {
				t.Logf("thread message %s: %s %s", m.TS, m.Text, m.Blocks)
			}
			for i, tr := range transcripts() {
				t.Logf("model request %d: %s", i, tr)
			}
		}
	})
	root = fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> WRITE the files"})
	s.mention("EvW", root, "", "WRITE the files")
	s.approve(root, "wrote-files")
	s.answer(root, 1)
	for i, step := range []string{"PNG", "NOTES", "LINK"} {
		ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> " + step})
		s.mention("Ev"+step, ts, root, step)
		if askSend {
			s.approve(root, "send_file")
		}
		s.answer(root, i+2)
	}
	s.notice(root, "Not sent: notes.txt")
	s.notice(root, "Not sent: link.png")
	files := fake.Files()
	if len(files) != 1 || files[0].Name != "chart.png" || files[0].ThreadTS != root || !bytes.Equal(files[0].Content, png) {
		t.Errorf("uploads %+v, want chart.png in the thread, byte for byte", files)
	}
}

// codexSendFile readies the codex send_file tests: the CLI, threadline-mcp,
// the test's directory (isolate), the PNG and the Responses fake scripted
// for the WRITE, PNG, NOTES and LINK turns, and codex's environment.
func codexSendFile(t *testing.T) (bin, dir string, png []byte, api *fakeresponses.Server, env map[string]string) {
	t.Helper()
	bin = providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	buildThreadlineMCP(t)
	dir = isolate(t)
	png = providertest.PNG(t)
	api = fakeresponses.New(t,
		fakeresponses.WhenLast("WRITE", fakeresponses.Shell(writeFilesCommand(png))),
		fakeresponses.WhenLast("PNG", fakeresponses.MCPCall("send_file", map[string]any{"path": "chart.png"})),
		fakeresponses.WhenLast("NOTES", fakeresponses.MCPCall("send_file", map[string]any{"path": "notes.txt"})),
		fakeresponses.WhenLast("LINK", fakeresponses.MCPCall("send_file", map[string]any{"path": "link.png"})))
	home, env, err := api.CodexHome(dir, "fake-model")
	if err != nil {
		t.Fatal(err)
	}
	env["CODEX_HOME"] = home
	return bin, dir, png, api, env
}

// TestSendFileCodexEndToEnd: the same through the real codex app-server
// (against the scripted Responses fake), the server given in thread/start's
// config: the model writes the files with a command (approved on its card),
// then, one turn each, calls the threadline server's send_file (its MCP
// tool-call approval answered on its card) for the PNG, which is uploaded
// in the thread byte for byte, and for the file holding a secret and the
// link out, which are refused back to the model, one line each in the
// thread, nothing uploaded.
func TestSendFileCodexEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin, d, png, api, env := codexSendFile(t)
	sendFileTurns(t, d, "codex", map[string]any{"bin": bin, "env": env}, "sk-codex-9Tb3Hn6Rw2Kx5Qv8", png, true,
		func() []string { return providertest.Transcripts(api.Requests()) })
	var outputs []string
	for _, r := range api.Requests() {
		for _, o := range r.FunctionOutputs() {
			outputs = append(outputs, o.OutputText())
		}
	}
	if got := strings.Join(outputs, "\n"); strings.Count(got, "refused") != 2 || !strings.Contains(got, "chart.png") {
		t.Errorf("what the model got back:\n%s", got)
	}
}

// TestSendFileOpencodeEndToEnd: the same through the real opencode over ACP
// (against the scripted OpenAI-compatible fake), the server given in
// session/new's mcpServers; opencode runs an MCP tool without asking, so
// only the bash command is approved on its card.
func TestSendFileOpencodeEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	def := acp.Opencode()
	bin := providertest.FindCLI(t, def.Bin, "THREADLINE_OPENCODE_BIN")
	buildThreadlineMCP(t)
	d := isolate(t)
	png := providertest.PNG(t)
	send := func(path string) fakeopenai.Script {
		return fakeopenai.Call([]string{"threadline_send_file"}, func(fakeopenai.Tool) map[string]any { return map[string]any{"path": path} })
	}
	api := fakeopenai.New(t, fakeopenai.When("WRITE", fakeopenai.Shell(writeFilesCommand(png))),
		fakeopenai.When("PNG", send("chart.png")), fakeopenai.When("NOTES", send("notes.txt")), fakeopenai.When("LINK", send("link.png")))
	env, err := def.Configure(filepath.Join(d, "opencode"), acp.Endpoint{OpenAIBaseURL: api.URL() + "/v1", APIKey: "sk-fake", Model: fakeopenai.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	sendFileTurns(t, d, "opencode", map[string]any{"bin": bin, "env": env}, "sk-open-3Vd7Jq1Xp5Mw8Zr2", png, false,
		func() []string { return providertest.Transcripts(api.ChatRequests()) })
}

// TestSendFileSandboxedEndToEnd: the codex case of TestSendFileCodexEndToEnd
// with serve's default isolation (as root: the agent user, in the Landlock
// sandbox): the MCP server reaches the bot's socket from inside the
// sandbox; the PNG is uploaded, the secret file and the link out are
// refused. The files the agent wrote belong to the agent user.
func TestSendFileSandboxedEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	bin, d, png, api, env := codexSendFile(t)
	port, _ := strconv.Atoi(api.URL()[strings.LastIndex(api.URL(), ":")+1:])
	sendFileTurns(t, d, "codex", map[string]any{"bin": bin, "env": env, "sandbox": map[string]any{"connect": []int{port}}},
		"sk-codex-2Wm7Qz4Lp9Xc1Vb6", png, true,
		func() []string { return providertest.Transcripts(api.Requests()) },
		map[string]any{"host": nil})
	charts, _ := filepath.Glob(filepath.Join(d, "data", "threadline", "*", "*", "chart.png"))
	if len(charts) != 1 {
		t.Fatalf("the workspace's chart.png: %v", charts)
	}
	if fi, err := os.Stat(charts[0]); err != nil || strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)) != agentU.Uid {
		t.Errorf("%s: %v, want it the agent user's (%s)", charts[0], err, agentU.Uid)
	}
}

// TestMadeImageEndToEnd: through serve and the real codex, the model calls
// an MCP tool of the agent's own configuration (the test binary as the
// server, fakeresponses.ServeMCP) whose result is an image: the image is
// posted in the thread without any send_file call, byte for byte, and the
// audit lists it as sent.
func TestMadeImageEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	buildThreadlineMCP(t)
	d := isolate(t)
	api := fakeresponses.New(t, fakeresponses.WhenLast("CHART", fakeresponses.MCPCall(fakeresponses.MCPImageTool, map[string]any{"title": "load"})))
	home, env, err := api.CodexHome(d, "fake-model")
	if err != nil {
		t.Fatal(err)
	}
	providertest.AppendFile(t, home, "config.toml", fakeresponses.MCPConfigTOML("fakemcp", providertest.SelfExe(t), nil, map[string]string{testRoleEnv: "fakemcp"}))
	env["CODEX_HOME"] = home
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, d, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"agents": map[string]any{"codex": map[string]any{"bin": bin, "env": env}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "codex", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}}},
	})
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> CHART the load"})
	s.mention("EvC", root, "", "CHART the load")
	s.approve(root, fakeresponses.MCPImageTool)
	s.answer(root, 1)
	files := fake.Files()
	if len(files) != 1 || files[0].Name != "image-1.png" || files[0].ThreadTS != root || !bytes.Equal(files[0].Content, fakeresponses.MCPImage) {
		t.Fatalf("uploads %+v, want the tool's image as image-1.png in the thread", files)
	}
	s.stop()
	code, out, errOut, err := run(t, "", "audit", "--config", cfgPath)
	if code != 0 || err != nil {
		t.Fatalf("audit: exit %d, %v\n%s", code, err, errOut)
	}
	if !strings.Contains(out, "file.sent") || !strings.Contains(out, "Sent image-1.png to the thread") {
		t.Errorf("the audit lacks the image:\n%s", out)
	}
}

// TestFetchThreadFileEndToEnd: through serve, sandboxed as the agent user,
// with the real codex: a thread whose first message shares report.txt; the
// model calls fetch_thread_file for it (its approval answered on its
// card), then cats it with a command: the file is in the chat's
// workspace, the agent user's, with the bytes Slack served.
func TestFetchThreadFileEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	bin := providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	buildThreadlineMCP(t)
	d := isolate(t)
	const report = "the failing line is 42\n"
	api := fakeresponses.New(t,
		fakeresponses.WhenLast("FETCH", fakeresponses.MCPCall("fetch_thread_file", map[string]any{"name": "report.txt"})),
		fakeresponses.WhenLast("CAT", fakeresponses.Shell("cat report.txt")))
	home, env, err := api.CodexHome(d, "fake-model")
	if err != nil {
		t.Fatal(err)
	}
	env["CODEX_HOME"] = home
	port, _ := strconv.Atoi(api.URL()[strings.LastIndex(api.URL(), ":")+1:])
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, d, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"host":   nil, // serve's default: the agent user, sandboxed
		"agents": map[string]any{"codex": map[string]any{"bin": bin, "env": env, "sandbox": map[string]any{"connect": []int{port}}}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "codex", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}}},
	})
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	t.Cleanup(func() {
		if t.Failed() {
			for i, tr := range providertest.Transcripts(api.Requests()) {
				t.Logf("model request %d: %s", i, tr)
			}
		}
	})
	fileID, _ := fake.AddFile("report.txt", "text/plain", []byte(report))
	root := fake.Say(slacktest.Said{User: "UOPS", Channel: "C1", Text: "the nightly build fails, log attached", Files: []string{fileID}})
	for i, step := range []string{"FETCH", "CAT"} {
		ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> " + step + " the report"})
		s.mention("Ev"+step, ts, root, step+" the report")
		s.approve(root, map[string]string{"FETCH": "fetch_thread_file", "CAT": "cat report.txt"}[step])
		s.answer(root, i+1)
	}
	var outputs []string
	for _, r := range api.Requests() {
		for _, o := range r.FunctionOutputs() {
			outputs = append(outputs, o.OutputText())
		}
	}
	if got := strings.Join(outputs, "\n"); !strings.Contains(got, "report.txt") || !strings.Contains(got, strings.TrimSpace(report)) {
		t.Errorf("what the model got back:\n%s", got)
	}
	copies, _ := filepath.Glob(filepath.Join(d, "data", "threadline", "*", "*", "report.txt"))
	if len(copies) != 1 {
		t.Fatalf("the workspace's report.txt: %v", copies)
	}
	b, err := os.ReadFile(copies[0])
	fi, serr := os.Stat(copies[0])
	if err != nil || serr != nil || string(b) != report || strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)) != agentU.Uid {
		t.Errorf("%s: %q %v %v, want the report, the agent user's", copies[0], b, err, serr)
	}
}

// TestOutputLimitEndToEnd: through serve, the Slack fake and the real
// Claude CLI, a model that streams 2 MB of text against
// limits.run_output_bytes of 256 KB: the run is stopped, its footer says
// why, the database holds no more than the limit of its text, and the next
// prompt in the thread is answered.
func TestOutputLimitEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	api := floodAPI(t, "flood", 2048)
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"limits": map[string]any{"run_output_bytes": 256 << 10},
		"agents": map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}}},
	})
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> FLOOD the thread"})
	s.mention("EvF", root, "", "FLOOD the thread")
	s.notice(root, "The run failed", "limit of 256 KB (limits.run_output_bytes), so it was stopped")
	ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> CALM now"})
	s.mention("EvC", ts, root, "CALM now")
	s.answer(root, 1)
	s.stop()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tl.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored int
	if err := db.QueryRow(`SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM chat_events WHERE type = 'assistant.delta'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored > 2*(256<<10) || stored < 100<<10 {
		t.Errorf("the store holds %d bytes of answer deltas, want about the limit's 256 KB (JSON-framed)", stored)
	}
}
