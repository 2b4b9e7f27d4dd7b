package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/store"
)

// prefixStore is ChatsByPrefix over a list of ids.
type prefixStore []string

func (p prefixStore) ChatsByPrefix(_ context.Context, prefix string, limit int) ([]string, error) {
	var out []string
	for _, id := range p {
		if strings.HasPrefix(id, prefix) && len(out) < limit {
			out = append(out, id)
		}
	}
	return out, nil
}

func TestResolveChat(t *testing.T) {
	st := prefixStore{"0a1b2c3d-1111", "0a1b2c3d-2222", "0a1bffff-3333", "c1"}
	many := prefixStore{}
	for i := range 12 {
		many = append(many, fmt.Sprintf("beef%02d", i))
	}
	for _, c := range []struct {
		st      prefixStore
		arg     string
		want    string
		wantErr error
		says    string
	}{
		{st, "", "", nil, ""},
		{st, "0a1b2c3d-1111", "0a1b2c3d-1111", nil, ""},
		{st, "c1", "c1", nil, ""}, // a whole id, however short
		{st, "0a1bf", "0a1bffff-3333", nil, ""},
		{st, "0a1b2c3d-2", "0a1b2c3d-2222", nil, ""},
		{st, "0a1b2c3d", "", errAmbiguousChat, `--chat "0a1b2c3d": ambiguous chat prefix: it starts 2 chats' ids: 0a1b2c3d-1111, 0a1b2c3d-2222; give more characters`},
		{st, "dead", "", errNoChat, `--chat "dead": no chat starts with "dead" (threadline chats lists them)`},
		{st, "0a1", "", errShortChat, "at least its first 4 characters"},
		{many, "beef", "", errAmbiguousChat, "more than 10 chats' ids: beef00, beef01, beef02, beef03, beef04, beef05, beef06, beef07, beef08, beef09, …;"},
	} {
		got, err := resolveChat(t.Context(), c.st, c.arg)
		if got != c.want || !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("resolveChat(%q) = %q, %v; want %q, %v saying %q", c.arg, got, err, c.want, c.wantErr, c.says)
		}
	}
}

// TestChatFlagPrefix: audit --chat and chat --chat take a unique prefix of
// a chat's id; an unknown or ambiguous one is an error, not empty output.
func TestChatFlagPrefix(t *testing.T) {
	isolate(t)
	_, st, err := openStore(t.Context(), "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"7f3e9a01-aaaa", "7f3e9a01-bbbb", "5c2d0000-cccc"} {
		if err := st.CreateChat(t.Context(), &store.Chat{ID: id, Agent: "claude"}); err != nil {
			t.Fatal(err)
		}
		if err := st.StartRun(t.Context(), store.RunRecord{ID: agent.RunID("run-" + id), ChatID: agent.ChatID(id), Agent: "claude", StartedBy: "slack:U" + id[:4]}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, _, err := run(t, "", "audit", "--chat", "5c2d")
	if code != 0 || err != nil || !strings.Contains(out, "5c2d0000") || strings.Contains(out, "7f3e9a01") {
		t.Fatalf("audit --chat 5c2d: exit %d %v\n%s", code, err, out)
	}
	code, out, _, err = run(t, "", "audit", "--chat", "7f3e9a01")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "7f3e9a01-aaaa, 7f3e9a01-bbbb") || out != "" {
		t.Fatalf("audit --chat of an ambiguous prefix: exit %d %v\n%s", code, err, out)
	}
	code, out, _, err = run(t, "", "audit", "--chat", "abcd")
	if code != 1 || err == nil || !strings.Contains(err.Error(), `no chat starts with "abcd"`) || out != "" {
		t.Fatalf("audit --chat of an unknown prefix: exit %d %v\n%s", code, err, out)
	}
	code, _, _, err = run(t, "", "audit", "--chat", "5c2")
	if code != 2 || err == nil {
		t.Fatalf("audit --chat of a 3-character prefix: exit %d %v", code, err)
	}
	code, _, _, err = run(t, "", "chat", "--chat", "7f3e")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "ambiguous chat prefix") {
		t.Fatalf("chat --chat of an ambiguous prefix: exit %d %v", code, err)
	}
	code, _, _, err = run(t, "", "workspace", "diff", "--chat", "abcd")
	if code != 1 || err == nil || !strings.Contains(err.Error(), `no chat starts with "abcd"`) {
		t.Fatalf("workspace diff --chat of an unknown prefix: exit %d %v", code, err)
	}
}
