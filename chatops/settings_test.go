// Tests of who may change a chat's settings, the values a chat may take, the
// channel's agent and project lists, project access lists, requester_only,
// explicit approval decisions and bad attachments.

package chatops_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestPolicyChannelLists(t *testing.T) {
	t.Parallel()
	p := &chatops.Policy{Admins: []string{"slack:UADMIN"}}
	p.Set(chatops.Scope{Platform: "slack", Workspace: "T1"}, chatops.Rules{Agents: []string{"claude", "codex"}, Projects: []string{"web"}, RequesterOnly: true})
	p.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{Agents: []string{"claude"}, Allow: []string{"U1", "U2"}, Approvers: []string{"U2"}})
	c1 := chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1"}
	r := p.Channel(c1)
	if strings.Join(r.Agents, ",") != "claude" || strings.Join(r.Projects, ",") != "web" || !r.RequesterOnly {
		t.Fatalf("effective rules %+v: the channel's agents, the workspace's projects and requester_only", r)
	}
	for _, c := range []struct {
		who  string
		want bool
	}{{"U1", false}, {"U2", true}, {"UADMIN", true}, {"UX", false}} {
		if got := p.Allowed(chatops.User{Platform: "slack", ID: c.who}, c1, chatops.ActConfigure); got != c.want {
			t.Errorf("Allowed(%s, configure) = %v, want %v", c.who, got, c.want)
		}
	}
	u := func(id string) chatops.User { return chatops.User{Platform: "slack", ID: id} }
	team := chatops.ProjectAccess{Name: "web", Channels: []string{"C1"}, Allow: []string{"U1", "slack:U3"}}
	for _, c := range []struct {
		u    chatops.User
		pl   chatops.Place
		pa   chatops.ProjectAccess
		want bool
	}{
		{u("U1"), c1, team, true},
		{u("U3"), c1, team, true}, // qualified entry
		{u("U2"), c1, team, false},
		{u("U1"), chatops.Place{Platform: "slack", Channel: "C2"}, team, false},
		{u("UADMIN"), chatops.Place{Platform: "slack", Channel: "C2"}, team, true},
		// Closed by default: no channels list, nobody but admins.
		{u("U2"), c1, chatops.ProjectAccess{Name: "closed"}, false},
		{u("U2"), c1, chatops.ProjectAccess{Name: "closed", Allow: []string{"U2"}}, false},
		{u("UADMIN"), c1, chatops.ProjectAccess{Name: "closed"}, true},
		{u("U2"), c1, chatops.ProjectAccess{Channels: []string{"slack:C1"}}, true},
		{u("U2"), chatops.Place{Platform: "matrix", Channel: "!r:m.org"}, chatops.ProjectAccess{Channels: []string{"*"}}, true},
		{chatops.User{Platform: "matrix", ID: "U1"}, c1, chatops.ProjectAccess{Allow: []string{"slack:U1"}}, false},
	} {
		if got := p.MayBind(c.u, c.pl, c.pa); got != c.want {
			t.Errorf("MayBind(%s, %s, %+v) = %v, want %v", c.u.Qualified(), c.pl, c.pa, got, c.want)
		}
	}
}

// catalog is a fixed agent catalogue.
type catalog []chatops.AgentInfo

func (c catalog) Agents(context.Context) []chatops.AgentInfo { return c }

var testCatalog = catalog{
	{ID: "fake", Installed: true, Models: []string{"m1", "opus"}, Args: registry.ArgRules{Models: []string{"m1", "opus"}, Effort: true, Efforts: []string{"low", "high"}}},
	{ID: "fake2", Installed: true, Args: registry.ArgRules{FreeForm: true}},
}

// projectList is an in-memory chatops.Projects.
type projectList map[string]chatops.ProjectAccess

func (p projectList) ProjectAccess(_ context.Context, name string) (chatops.ProjectAccess, error) {
	pa, ok := p[name]
	if !ok {
		return chatops.ProjectAccess{}, fmt.Errorf("%w: %s", chatops.ErrNoProject, name)
	}
	return pa, nil
}

var testProjects = projectList{
	"proj":   {Name: "proj", Channels: []string{"C1"}},
	"web":    {Name: "web", Channels: []string{"C1"}, Allow: []string{"UAPPROVER"}},
	"secret": {Name: "secret", Channels: []string{"C7"}, Allow: []string{"UOTHER"}},
}

// setupCatalog is setup with an agent catalogue, the projects' access lists
// and the run's requester read from the store.
func setupCatalog(t *testing.T, st *store.Store, opts chatops.DeskOptions) *fixture {
	t.Helper()
	f := setup(t, st, opts)
	f.threads.Close()
	opts.Budget, opts.Workdir, opts.IdleFollow = testBudget, f.work, 200*time.Millisecond
	if opts.Projects == nil {
		opts.Projects = testProjects
	}
	opts.RunRequester = func(ctx context.Context, runID agent.RunID) (string, error) {
		r, err := st.GetRun(ctx, string(runID))
		return r.StartedBy, err
	}
	f.bot = chatops.New(chatstore.Store{St: st}, f.svc, chatstore.Feed{Hub: f.hub, St: st}, testCatalog, slog.New(slog.DiscardHandler))
	f.threads = chatops.NewDesk(f.bot, chatstore.Store{St: st}, f.policy, opts, slog.New(slog.DiscardHandler))
	f.threads.Attach("slack", f.surf)
	t.Cleanup(func() { f.threads.Close() })
	f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{
		Defaults: chatops.Defaults{Agent: "fake", Model: "m1", Project: "proj"},
		Allow:    []string{"UALLOWED", "UAPPROVER", "UAPPROVER2"}, Approvers: []string{"UAPPROVER", "UAPPROVER2"},
		Agents: []string{"fake"},
	})
	return f
}

// lastNotice is the body of the newest message in the thread.
func (f *fixture) lastNotice() string {
	ms := f.surf.inThread(thread)
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1].view.Body
}

func TestSettingsCommands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("only approvers change settings; bad values are refused and change nothing", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			f.prov.Add(chatopstest.Answer("one"), chatopstest.Answer("two"))
			if err := f.mention(t, "UALLOWED", "hello"); err != nil {
				t.Fatal(err)
			}
			chatID := f.chatOf(t, thread)
			waitFor(t, "answer", func() bool { return f.find(thread, func(m *message) bool { return m.view.Footer != "" }) != nil })
			before, _ := st.GetChat(t.Context(), string(chatID))
			for _, c := range []string{"model opus", "effort high", "mode plan", "project web", "agent fake"} {
				n := len(f.surf.ephemerals)
				if err := f.mention(t, "UALLOWED", c); !errors.Is(err, chatops.ErrForbidden) {
					t.Errorf("non-approver %q = %v, want ErrForbidden", c, err)
				}
				if len(f.surf.ephemerals) != n+1 || !strings.Contains(f.surf.ephemerals[n], "Only approvers") {
					t.Errorf("non-approver %q: ephemerals %q", c, f.surf.ephemerals)
				}
			}
			refused := map[string]string{
				"model --auto":         "That is not a valid model",
				"/model --auto":        "That is not a valid model",
				"/model m1 --auto":     "That is not a valid model",
				"model gpt-5":          "fake does not take model gpt-5",
				"effort max":           "fake does not take effort max; nothing was changed. Valid: low, high.",
				"effort --yolo":        "That is not a valid effort",
				"/mode --auto":         "Usage: /mode plan|default",
				"agent nope":           "This channel may use these agents: fake",
				"agent fake2":          "This channel may use these agents: fake",
				"project secret":       "Project secret is not open to this channel or to you",
				"project missing":      "There is no project missing",
				"project --help":       "not a project name",
				"/model <!channel>":    "That is not a valid model",
				"/effort high\x00 low": "That is not a valid effort",
			}
			for c, want := range refused {
				_ = f.mention(t, "UAPPROVER", c)
				if got := f.lastNotice(); !strings.Contains(got, want) {
					t.Errorf("%q: thread says %q, want %q", c, got, want)
				}
				if strings.Contains(f.lastNotice(), "<!channel>") {
					t.Errorf("%q: the refusal echoes the bad value: %q", c, f.lastNotice())
				}
			}
			// Outside a channel list, an agent must still be in the catalogue
			// (the console runs the same Execute).
			res, err := f.bot.Execute(t.Context(), chatID, chatops.Command{Name: "agent", Arg: "nope"})
			if err != nil || res.Text != "There is no such agent here. Valid agents: fake, fake2." {
				t.Errorf("Execute agent nope = %q, %v", res.Text, err)
			}
			if res, _ := f.bot.Execute(t.Context(), chatID, chatops.Command{Name: "model", Arg: "gpt-5"}); !strings.Contains(res.Text, "Valid: m1, opus.") {
				t.Errorf("model refusal does not list the models: %q", res.Text)
			}
			after, _ := st.GetChat(t.Context(), string(chatID))
			if after.Model != before.Model || after.Effort != before.Effort || after.Mode != before.Mode || after.Project != before.Project || after.Agent != before.Agent {
				t.Fatalf("refused commands changed the chat: %+v -> %+v", before, after)
			}
			// The next run carries the unchanged settings: "--auto" never
			// reached the agent.
			if err := f.mention(t, "UALLOWED", "again"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "second run", func() bool { return len(f.prov.Requests()) == 2 })
			// project is refused while a turn runs: the run must have ended.
			waitFor(t, "the second run to end", func() bool { _, ok := f.bot.Active(chatID); return !ok })
			for _, req := range f.prov.Requests() {
				if req.Model != "m1" || strings.Contains(req.Model+req.Effort+string(req.Mode), "--auto") {
					t.Fatalf("run request %+v", req)
				}
			}
			// Approvers set valid values; admins bind any project.
			for _, c := range []string{"model opus", "effort high", "mode plan", "project web"} {
				if err := f.mention(t, "UAPPROVER", c); err != nil {
					t.Fatalf("%q: %v", c, err)
				}
			}
			if err := f.mention(t, "UADMIN", "project secret"); err != nil {
				t.Fatalf("admin project secret: %v", err)
			}
			c, _ := st.GetChat(t.Context(), string(chatID))
			if c.Model != "opus" || c.Effort != "high" || c.Mode != "plan" || c.Project != "secret" {
				t.Fatalf("chat after valid commands %+v", c)
			}
		})

		t.Run("a channel's default project outside the project's list binds nothing", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{
				Defaults: chatops.Defaults{Agent: "fake", Project: "secret"}, Allow: []string{"UALLOWED"}})
			err := f.mention(t, "UALLOWED", "hello")
			if !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("HandleMessage = %v, want ErrForbidden", err)
			}
			if _, ok, _ := (chatstore.Store{St: st}).Binding(t.Context(), thread); ok {
				t.Fatal("the thread was bound to a chat of project secret")
			}
			if got := f.lastNotice(); !strings.Contains(got, "Project secret is not open") {
				t.Fatalf("thread says %q", got)
			}
			if n := len(f.prov.Requests()); n != 0 {
				t.Fatalf("%d runs started", n)
			}
		})

		t.Run("requester_only: only the run's requester or an admin answers", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			rules := f.policy.Channel(thread)
			rules.RequesterOnly = true
			f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, rules)
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(chatopstest.Asking("perm-1", "make deploy", got, "done"))
			if err := f.mention(t, "UAPPROVER", "deploy"); err != nil {
				t.Fatal(err)
			}
			ref := approveRef(t, f, "make deploy")
			err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER2"), Button: chatops.ButtonApprove, Ref: ref})
			if !errors.Is(err, chatops.ErrForbidden) || !strings.Contains(strings.Join(f.surf.ephemerals, "\n"), "only the person who started the run") {
				t.Fatalf("another approver's click = %v, ephemerals %q", err, f.surf.ephemerals)
			}
			select {
			case r := <-got:
				t.Fatalf("a refused click reached the agent: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: chatops.ButtonApprove, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.By != "slack:UAPPROVER" || r.Decision != agent.DecisionApprove {
				t.Fatalf("response %+v", r)
			}
			// An admin may answer anyone's run.
			f.prov.Add(chatopstest.Asking("perm-2", "make undeploy", got, "done"))
			waitFor(t, "the first run to end", func() bool { _, ok := f.bot.Active(f.chatOf(t, thread)); return !ok })
			if err := f.mention(t, "UAPPROVER", "undeploy"); err != nil {
				t.Fatal(err)
			}
			ref = approveRef(t, f, "make undeploy")
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UADMIN"), Button: chatops.ButtonApprove, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.By != "slack:UADMIN" {
				t.Fatalf("response %+v", r)
			}
		})

		t.Run("free text does not answer an approval", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(chatopstest.Asking("perm-3", "rm -rf /tmp/x", got, "done"))
			if err := f.mention(t, "UAPPROVER", "clean"); err != nil {
				t.Fatal(err)
			}
			ref := approveRef(t, f, "rm -rf /tmp/x")
			for _, text := range []string{"ok", "yes", "y", "👍", "allow"} {
				err := f.threads.HandleAnswer(t.Context(), chatops.Answer{Place: thread, User: user("UAPPROVER"), Ref: ref, Answers: map[string]string{"": text}})
				if err == nil {
					t.Fatalf("free text %q answered an approval", text)
				}
			}
			// Even a Ref carrying an answer decision (a forged or stale button)
			// is refused by the prompt service.
			forged := ref
			forged.Decision = agent.DecisionAnswer
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: chatops.ButtonApprove, Ref: forged}); err == nil {
				t.Fatal("an answer decision was accepted for an approval")
			}
			if !strings.Contains(strings.Join(f.surf.ephemerals, "\n"), "This request needs a decision") {
				t.Errorf("ephemerals %q", f.surf.ephemerals)
			}
			select {
			case r := <-got:
				t.Fatalf("free text reached the agent as %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: chatops.ButtonApprove, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.Decision != agent.DecisionApprove {
				t.Fatalf("response %+v", r)
			}
		})

		t.Run("a typed approve in the thread approves; ok, yes, y and 👍 do not", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(chatopstest.Asking("perm-4", "make release", got, "released"))
			for range 5 {
				f.prov.Add(chatopstest.Answer("fine"))
			}
			if err := f.mention(t, "UAPPROVER", "release"); err != nil {
				t.Fatal(err)
			}
			approveRef(t, f, "make release")
			chatID := f.chatOf(t, thread)
			for _, text := range []string{"ok", "yes", "y", "👍", "allow"} {
				if err := f.mention(t, "UAPPROVER", text); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
			}
			select {
			case r := <-got:
				t.Fatalf("a casual reply answered the approval: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			// They are prompts, queued behind the run.
			if n := f.threads.Queued(chatID); n != 5 {
				t.Fatalf("%d queued, want the 5 casual replies", n)
			}
			// A non-approver's typed approve is refused.
			if err := f.mention(t, "UALLOWED", "approve"); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("non-approver approve = %v", err)
			}
			if err := f.mention(t, "UAPPROVER", "Approve."); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "perm-4" || r.Decision != agent.DecisionApprove || r.By != "slack:UAPPROVER" {
				t.Fatalf("typed approve = %+v", r)
			}
			// The queued replies then run as prompts, one by one.
			waitFor(t, "the queue to drain", func() bool {
				_, ok := f.bot.Active(chatID)
				return !ok && f.threads.Queued(chatID) == 0 && len(f.prov.Requests()) == 6
			})
			if p := f.prov.Requests()[1].Prompt; !strings.HasSuffix(p, "New message:\nok") {
				t.Errorf("the first queued prompt is %q, want the reply ok", p)
			}
		})

		t.Run("a question still takes free text; a typed approve is not its answer", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "ask-9", Kind: agent.KindQuestion,
					Questions: []agent.Question{{ID: "q1", Text: "Which branch?"}}}})
				select {
				case r := <-req.Responses:
					got <- r
					emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "ask-9", Status: "answered", By: r.By}})
				case <-ctx.Done():
				}
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			}, chatopstest.Answer("later"))
			if err := f.mention(t, "UAPPROVER", "ship"); err != nil {
				t.Fatal(err)
			}
			var card *message
			waitFor(t, "the question card", func() bool {
				card = f.find(thread, func(m *message) bool {
					return strings.Contains(m.view.Body, "Which branch?") && len(m.view.Buttons) > 0
				})
				return card != nil
			})
			if err := f.mention(t, "UAPPROVER", "approve"); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-got:
				t.Fatalf("a typed approve answered a question: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			var answer chatops.Button
			for _, b := range card.view.Buttons {
				if b.ID == chatops.ButtonAnswer {
					answer = b
				}
			}
			ref, err := chatops.DecodeRef(answer.Value)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.threads.HandleAnswer(t.Context(), chatops.Answer{Place: thread, User: user("UAPPROVER"), Ref: ref, Answers: map[string]string{"q1": "main, please"}}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.Decision != agent.DecisionAnswer || r.Answers["q1"] != "main, please" {
				t.Fatalf("free-text answer %+v", r)
			}
		})

		t.Run("bad attachments are skipped with a note and the rest runs", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{MaxFileBytes: 64})
			f.prov.Add(chatopstest.Answer("seen"), chatopstest.Answer("seen again"))
			files := []chatops.File{
				{Name: "good.txt", MediaType: "text/plain", Data: []byte("fine")},
				{Name: "evil\x00.txt", MediaType: "text/plain", Data: []byte("nul")},
				{Name: strings.Repeat("n", 256) + ".txt", MediaType: "text/plain", Data: []byte("long")},
				{Name: "../../etc/cron.d/x", MediaType: "text/plain", Data: []byte("up")},
				{Name: `..\..\boot.ini`, MediaType: "text/plain", Data: []byte("win")},
				{Name: "..", MediaType: "text/plain", Data: []byte("dots")},
				{Name: "<!channel>.png", MediaType: "image/png", Data: []byte(strings.Repeat("x", 65))},
				{Name: "shot.png", MediaType: "image/png", Data: []byte("\x89PNG")},
			}
			err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, User: user("UALLOWED"), Text: "look", Mentioned: true, Files: files})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the run", func() bool { return len(f.prov.Requests()) == 1 })
			req := f.prov.Requests()[0]
			if !strings.Contains(req.Prompt, "look") || !strings.Contains(req.Prompt, "good.txt") || len(req.Images) != 1 || req.Images[0].Name != "shot.png" {
				t.Fatalf("prompt %q, images %+v", req.Prompt, req.Images)
			}
			note := f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Body, "I skipped") })
			if note == nil {
				t.Fatalf("no note in the thread: %+v", f.surf.inThread(thread))
			}
			for _, w := range []string{"control character", "longer than 255 bytes", "path separator", `holds ".."`, "a file (larger than 64 bytes)"} {
				if !strings.Contains(note.view.Body, w) {
					t.Errorf("note %q lacks %q", note.view.Body, w)
				}
			}
			for _, bad := range []string{"\x00", "<!channel>", "etc/cron", f.work, "nnnnnnnn"} {
				if strings.Contains(note.view.Body, bad) {
					t.Errorf("note %q shows %q", note.view.Body, bad)
				}
			}
			c, _ := st.GetChat(t.Context(), string(f.chatOf(t, thread)))
			entries, _ := os.ReadDir(c.Cwd)
			if len(entries) != 1 || entries[0].Name() != "good.txt" {
				t.Fatalf("working directory holds %v", entries)
			}
			// A file that cannot be saved (the working directory is gone,
			// replaced by a file) is skipped without the server's path.
			waitFor(t, "the first run to end", func() bool { _, ok := f.bot.Active(agent.ChatID(c.ID)); return !ok })
			if err := os.RemoveAll(c.Cwd); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.Cwd, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			err = f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, User: user("UALLOWED"), Text: "again", Mentioned: true,
				Files: []chatops.File{{Name: "report.txt", MediaType: "text/plain", Data: []byte("r")}}})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the second run", func() bool { return len(f.prov.Requests()) == 2 })
			for _, m := range f.surf.inThread(thread) {
				if strings.Contains(m.view.Body, f.work) || strings.Contains(m.view.Body, filepath.Base(c.Cwd)+"/") {
					t.Errorf("a message shows the server path: %q", m.view.Body)
				}
			}
			if note := f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "`report.txt` (it could not be saved)") }); note == nil {
				t.Errorf("no note for the unsaved file: %+v", f.surf.inThread(thread))
			}
		})
	})
}

// approveRef waits for the approval card of command and returns its Approve ref.
func approveRef(t *testing.T, f *fixture, command string) chatops.Ref {
	t.Helper()
	var card *message
	waitFor(t, "the card", func() bool {
		card = f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, command) && len(m.view.Buttons) > 0 })
		return card != nil
	})
	for _, b := range card.view.Buttons {
		if b.ID == chatops.ButtonApprove {
			ref, err := chatops.DecodeRef(b.Value)
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
	}
	t.Fatalf("no Approve button on %+v", card.view)
	return chatops.Ref{}
}
