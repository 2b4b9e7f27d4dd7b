package projects

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestChecksAreUsageErrors(t *testing.T) {
	for name, err := range map[string]error{
		"project name":        Project{Name: "-x", Container: "c"}.Check(),
		"container name":      Project{Name: "p", Container: "c-"}.Check(),
		"image":               Project{Name: "p", Container: "c", Image: "-bad"}.Check(),
		"secret key":          ValidSecretKey("1X"),
		"bot secret key":      ValidSecretKey("SLACK_BOT_TOKEN"),
		"long name":           Project{Name: strings.Repeat("p", 64), Container: "c"}.Check(),
		"long container":      Project{Name: "p", Container: strings.Repeat("c", 64)}.Check(),
		"long image":          Project{Name: "p", Container: "c", Image: "r:" + strings.Repeat("i", 256)}.Check(),
		"long base":           Project{Name: "p", Repo: "/srv/r.git", Base: strings.Repeat("b", 201)}.Check(),
		"repo in a container": Project{Name: "p", Container: "c", Repo: "/srv/r.git"}.Check(),
	} {
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want ErrUsage", name, err)
		}
	}
	if err := (Project{Name: strings.Repeat("p", 63), Container: strings.Repeat("c", 63), Image: strings.Repeat("r", 63) + ":" + strings.Repeat("i", 255)}).Check(); err != nil {
		t.Errorf("a project with the longest names: %v", err)
	}
	if err := (Project{Name: "p", Repo: "/srv/r.git", Base: strings.Repeat("b", 200)}).Check(); err != nil {
		t.Errorf("the longest base: %v", err)
	}
	if err := (Project{Name: "web.app", Container: "web-1", Image: "ubuntu:24.04"}).Check(); err != nil {
		t.Errorf("a valid project: %v", err)
	}
	if err := ValidSecretKey("GH_TOKEN"); err != nil {
		t.Errorf("GH_TOKEN: %v", err)
	}
}

func TestRepoChecks(t *testing.T) {
	ok := Project{Name: "p", Repo: "git@git.example.org:team/web.git", Base: "release/2.x",
		Setup: "npm ci && make", Forge: "gitea", ForgeURL: "https://git.example.org"}
	if err := ok.Check(); err != nil {
		t.Errorf("a valid project with a repository: %v", err)
	}
	for name, mod := range map[string]func(*Project){
		"option as repo":       func(p *Project) { p.Repo = "--upload-pack=touch /tmp/x" },
		"space in repo":        func(p *Project) { p.Repo = "/srv/a b" },
		"option as base":       func(p *Project) { p.Base = "-b" },
		"dots in base":         func(p *Project) { p.Base = "a..b" },
		"lock base":            func(p *Project) { p.Base = "main.lock" },
		"space in base":        func(p *Project) { p.Base = "ma in" },
		"NUL in setup":         func(p *Project) { p.Setup = "make\x00" },
		"unknown forge":        func(p *Project) { p.Forge = "bitbucket" },
		"forge url scheme":     func(p *Project) { p.ForgeURL = "ftp://git.example.org" },
		"forge url with login": func(p *Project) { p.ForgeURL = "https://bot:tok@git.example.org" },
		"forge url, no forge":  func(p *Project) { p.Forge = "" },
		"base without repo":    func(p *Project) { p.Repo = "" },
	} {
		p := ok
		mod(&p)
		if err := p.Check(); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want ErrUsage", name, err)
		}
	}
}

func TestAddStoresRepo(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Chdir(t.TempDir())
		var out, errs strings.Builder
		a := Admin{St: st, Image: "ubuntu", Out: &out, Err: &errs}
		if err := a.Add(t.Context(), Project{Name: "web", Repo: "repos/web", Base: "main", Setup: "make",
			Forge: "github", ForgeURL: "https://github.example.com"}); err != nil {
			t.Fatal(err)
		}
		if err := a.Add(t.Context(), Project{Name: "api", Repo: "git@host:o/api.git"}); err != nil {
			t.Fatal(err)
		}
		web, err := st.GetProject(t.Context(), "web")
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(web.Repo) || !strings.HasSuffix(web.Repo, "/repos/web") || web.Base != "main" || web.Setup != "make" ||
			web.Forge != "github" || web.ForgeURL != "https://github.example.com" || web.CloneDir != "" {
			t.Errorf("stored %+v", web)
		}
		if api, _ := st.GetProject(t.Context(), "api"); api.Repo != "git@host:o/api.git" {
			t.Errorf("a remote repository changed: %q", api.Repo)
		}
	})
}

func TestIsRemote(t *testing.T) {
	for repo, want := range map[string]bool{
		"https://github.com/o/r.git": true,
		"ssh://git@host/r":           true,
		"git@host:o/r.git":           true,
		"host:r":                     true,
		"/srv/repos/r":               false,
		"../r":                       false,
		"./a:b":                      false,
		"/srv/a:b":                   false,
		"r":                          false,
	} {
		if got := isRemote(repo); got != want {
			t.Errorf("isRemote(%q) = %v, want %v", repo, got, want)
		}
	}
}

func TestAccessList(t *testing.T) {
	got, err := AccessList("channels", " C1, !room:example.org ")
	if err != nil || strings.Join(got, "|") != "C1|!room:example.org" {
		t.Errorf("AccessList = %q, %v", got, err)
	}
	if got, err := AccessList("allow", "  "); got != nil || err != nil {
		t.Errorf("empty: %q, %v", got, err)
	}
	for _, bad := range []string{"C1,,C2", "U 1", "C\x001", strings.Repeat("x", 256)} {
		if _, err := AccessList("allow", bad); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--allow: invalid id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestReadSecret(t *testing.T) {
	for in, want := range map[string]string{"s3cret\n": "s3cret", "a\r\n": "a", "two\nlines\n": "two\nlines"} {
		if got, err := ReadSecret(strings.NewReader(in), nil, "K"); err != nil || got != want {
			t.Errorf("ReadSecret(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "empty value", "\n": "empty value", "a\x00b": "NUL", strings.Repeat("x", MaxSecretBytes+1): "longer than"} {
		if _, err := ReadSecret(strings.NewReader(in), nil, "K"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadSecret(%.10q): %v, want %q", in, err, want)
		}
	}
}
