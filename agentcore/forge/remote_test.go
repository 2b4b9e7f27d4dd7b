package forge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/forge"
)

func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want forge.Remote
	}{
		{"https://github.com/octocat/Hello-World.git", forge.Remote{"github.com", "octocat", "Hello-World"}},
		{"https://github.com/octocat/Hello-World", forge.Remote{"github.com", "octocat", "Hello-World"}},
		{"https://github.com/octocat/Hello-World/", forge.Remote{"github.com", "octocat", "Hello-World"}},
		{"http://alice:s3cret@127.0.0.1:3000/alice/web.git", forge.Remote{"127.0.0.1:3000", "alice", "web"}},
		{"https://oauth2:glpat-xyz@gitlab.com/group/sub/deeper/proj.git", forge.Remote{"gitlab.com", "group/sub/deeper", "proj"}},
		{"ssh://git@gitea.example.com:2222/team/app.git", forge.Remote{"gitea.example.com:2222", "team", "app"}},
		{"ssh://git@github.com/octocat/Hello-World.git", forge.Remote{"github.com", "octocat", "Hello-World"}},
		{"git+ssh://git@github.com/octocat/x.y.git", forge.Remote{"github.com", "octocat", "x.y"}},
		{"git://git.example.org/team/app", forge.Remote{"git.example.org", "team", "app"}},
		{"git@github.com:octocat/Hello-World.git", forge.Remote{"github.com", "octocat", "Hello-World"}},
		{"git@gitlab.com:group/sub/proj.git", forge.Remote{"gitlab.com", "group/sub", "proj"}},
		{"gitlab.com:group/proj", forge.Remote{"gitlab.com", "group", "proj"}},
		{"  git@host:/owner/repo.git\n", forge.Remote{"host", "owner", "repo"}},
	} {
		got, err := forge.ParseRemote(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRemote(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRemoteRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"/srv/git/repo.git",
		"./repo",
		"../up/repo",
		"file:///srv/git/owner/repo.git",
		"https://github.com/octocat",
		"https://github.com/",
		"git@github.com:repo.git",
		"https://github.com/octocat/../repo",
		"https://github.com//repo",
		"ssh://git@host/~user/repo.git",
		"ftp://host/owner/repo",
		"https://user:hunter2hunter2@host/onlyone",
	} {
		got, err := forge.ParseRemote(in)
		if !errors.Is(err, forge.ErrInvalid) {
			t.Errorf("ParseRemote(%q) = %+v, %v; want ErrInvalid", in, got, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseRemote(%q): the error repeats the password: %v", in, err)
		}
	}
}
