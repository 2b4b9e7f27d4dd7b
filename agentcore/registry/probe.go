// Detection: probe every adapter concurrently (launch target, version,
// models, auth), isolating each adapter's failures.

package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Probe defaults.
const (
	DefaultVersionTimeout = 5 * time.Second
	DefaultModelTimeout   = 15 * time.Second
	// maxProbeOutput bounds what a probe command's output is read into.
	maxProbeOutput = 64 << 10
)

// Status is the outcome of probing one adapter.
type Status string

// Statuses.
const (
	// StatusReady: the launch target exists and answered its version probe.
	StatusReady Status = "ready"
	// StatusMissing: no launch target was found.
	StatusMissing Status = "missing"
	// StatusBroken: a launch target exists but its version probe failed
	// (crashed, timed out, printed no version).
	StatusBroken Status = "broken"
)

// AuthState is what detection could tell about the CLI's sign-in.
type AuthState string

// Auth states.
const (
	AuthOK      AuthState = "ok"
	AuthMissing AuthState = "missing"
	AuthUnknown AuthState = "unknown"
)

// Report is the result of probing one adapter. It holds no secret: auth is
// reported by variable names and file paths only.
type Report struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Base   string `json:"base,omitempty"`
	Status Status `json:"status"`
	// Path is the resolved launch target; Tried the candidates looked up.
	Path  string   `json:"path,omitempty"`
	Tried []string `json:"tried,omitempty"`
	// Version is the CLI's version; VersionWarning is set when it is not one
	// the adapter was verified with ("verified with X; found Y").
	Version        string      `json:"version,omitempty"`
	VersionWarning string      `json:"version_warning,omitempty"`
	Models         []string    `json:"models,omitempty"`
	ModelSource    ModelSource `json:"model_source,omitempty"`
	// ModelsFreeForm says models beyond Models are valid (Models.FreeForm,
	// unless the operator declared the models).
	ModelsFreeForm bool `json:"models_free_form,omitempty"`
	// Efforts are the declared effort levels (Definition.Efforts).
	Efforts      []string        `json:"efforts,omitempty"`
	Auth         AuthState       `json:"auth"`
	AuthDetail   string          `json:"auth_detail,omitempty"`
	Format       StreamFormat    `json:"format"`
	Dialect      string          `json:"dialect,omitempty"`
	Resume       ResumeMechanism `json:"resume"`
	Fork         bool            `json:"fork"`
	Capabilities Capabilities    `json:"capabilities"`
	InstallHint  string          `json:"install_hint,omitempty"`
	// Verified states what verified the definition.
	Verified VerifiedReport `json:"verified"`
	// Problems are diagnostics: a broken probe, a failed model listing.
	Problems []string `json:"problems,omitempty"`
	// Cached says the version and models came from the capability cache.
	Cached bool `json:"cached,omitempty"`
}

// ProbeOptions tune Probe. The zero value works.
type ProbeOptions struct {
	// VersionTimeout bounds each version probe (default 5 s) unless the
	// definition sets its own; ModelTimeout each model listing (default 15 s).
	VersionTimeout time.Duration
	ModelTimeout   time.Duration
	// LookPath resolves candidates (default exec.LookPath).
	LookPath func(string) (string, error)
	// Env is the base environment of probe children, already filtered by the
	// caller (procrun.Environ). Nil means a minimal allow-list of the host's
	// (PATH, HOME, USER, LANG, LC_*, TMPDIR, XDG_*). Each definition's Env is
	// added on top.
	Env []string
	// Getenv reads the host environment for auth hints and ${VAR} paths
	// (default os.Getenv).
	Getenv func(string) string
	// Home is the home directory for "~/" paths (default os.UserHomeDir).
	Home string
	// Cache, when set, is consulted and filled.
	Cache *Cache
	// Logger receives per-adapter diagnostics (default: discard).
	Logger *slog.Logger
	// Confine, when set, readies the processes a probe of d starts (version,
	// model listing, model discovery) exactly as a run of d starts: it
	// returns the context to start them with (carrying the run's isolation
	// and sandbox, procrun.WithIsolation and WithSandbox), their environment
	// (env with the run's home and state switches) and their working
	// directory. Without it probes start as this process with env.
	Confine func(ctx context.Context, d Definition, env []string) (context.Context, []string, string, error)
}

// Probe probes every definition concurrently and returns one report per
// definition, in the same order. A failure (missing executable, crash,
// timeout, panic in a parser) is confined to its adapter's report. ctx
// cancels every probe still running.
func Probe(ctx context.Context, defs []Definition, opts ProbeOptions) []Report {
	opts = opts.withDefaults()
	out := make([]Report, len(defs))
	var wg sync.WaitGroup
	for i, d := range defs {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					opts.Logger.Error("agent probe panicked", logkey.Agent, d.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					out[i] = baseReport(d)
					out[i].Status = StatusBroken
					out[i].Problems = append(out[i].Problems, fmt.Sprintf("probe failed: %v", v))
				}
			}()
			out[i] = probeOne(ctx, d, opts)
		})
	}
	wg.Wait()
	return out
}

func (o ProbeOptions) withDefaults() ProbeOptions {
	if o.VersionTimeout <= 0 {
		o.VersionTimeout = DefaultVersionTimeout
	}
	if o.ModelTimeout <= 0 {
		o.ModelTimeout = DefaultModelTimeout
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Env == nil {
		o.Env = minimalEnv(os.Environ())
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// minimalEnv keeps the variables a version probe needs and nothing secret.
func minimalEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "USER", k == "LOGNAME", k == "LANG", k == "TMPDIR", k == "TZ",
			strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "XDG_"):
			out = append(out, kv)
		}
	}
	return out
}

func baseReport(d Definition) Report {
	return Report{
		ID: d.ID, Name: d.Name, Base: d.Base, Status: StatusMissing,
		Format: d.Format, Dialect: d.Dialect, Resume: d.Resume, Fork: d.NativeFork,
		Capabilities: d.Caps, InstallHint: d.InstallHint, Auth: AuthUnknown,
		ModelsFreeForm: d.Models.FreeForm && len(d.ConfigModels) == 0,
		Efforts:        append([]string(nil), d.Efforts...),
		Verified:       verifiedReport(d),
	}
}

func probeOne(ctx context.Context, d Definition, opts ProbeOptions) Report {
	r := baseReport(d)
	logger := opts.Logger.With(logkey.Agent, d.ID)
	env := childEnv(opts.Env, d.Env)
	r.Auth, r.AuthDetail = checkAuth(d, opts)

	launch, err := Resolve(d, opts.LookPath)
	r.Tried = launch.Tried
	if err != nil {
		r.Models, r.ModelSource = staticModels(d)
		return r
	}
	r.Path = launch.Path
	r.Status = StatusReady
	dir := ""
	if opts.Confine != nil {
		var err error
		if ctx, env, dir, err = opts.Confine(ctx, d, env); err != nil {
			r.Status = StatusBroken
			r.Problems = append(r.Problems, "prepare the probe as a run: "+err.Error())
			r.Models, r.ModelSource = staticModels(d)
			return r
		}
	}

	var mtime time.Time
	if fi, err := os.Stat(launch.Path); err == nil {
		mtime = fi.ModTime()
	}
	version, cachedVersion := "", false
	if opts.Cache != nil {
		version, cachedVersion = opts.Cache.Version(d.ID, launch.Path, mtime)
	}
	if !cachedVersion {
		version, err = probeVersion(ctx, d, launch.Path, dir, env, opts)
		if err != nil {
			logger.Warn("version probe failed", "path", launch.Path, "err", err)
			r.Status = StatusBroken
			r.Problems = append(r.Problems, err.Error())
			r.Models, r.ModelSource = staticModels(d)
			return r
		}
	}
	r.Version = version
	if len(d.VerifiedVersions) > 0 && !slices.Contains(d.VerifiedVersions, version) {
		r.VersionWarning = fmt.Sprintf("verified with %s; found %s", strings.Join(d.VerifiedVersions, ", "), version)
	}

	if len(d.ConfigModels) > 0 {
		r.Models, r.ModelSource = append([]string(nil), d.ConfigModels...), ModelsConfig
		if opts.Cache != nil && !cachedVersion {
			opts.Cache.Put(CacheKey{ID: d.ID, Path: launch.Path, Version: version, ModTime: mtime}, CacheEntry{Version: version})
		}
		r.Cached = cachedVersion
		return r
	}
	key := CacheKey{ID: d.ID, Path: launch.Path, Version: version, ModTime: mtime}
	if opts.Cache != nil {
		if e, ok := opts.Cache.Get(key); ok {
			r.Models, r.ModelSource, r.Cached = e.Models, e.ModelSource, true
			if e.ModelProblem != "" {
				r.Problems = append(r.Problems, e.ModelProblem)
			}
			return r
		}
	}
	entry := CacheEntry{Version: version}
	entry.Models, entry.ModelSource, entry.ModelProblem = listModels(ctx, d, launch.Path, dir, env, opts)
	if entry.ModelProblem != "" {
		logger.Warn("model listing failed", "err", entry.ModelProblem)
		r.Problems = append(r.Problems, entry.ModelProblem)
	}
	r.Models, r.ModelSource = entry.Models, entry.ModelSource
	if opts.Cache != nil && ctx.Err() == nil {
		opts.Cache.Put(key, entry)
	}
	return r
}

// staticModels is the list shown without running the CLI.
func staticModels(d Definition) ([]string, ModelSource) {
	if len(d.ConfigModels) > 0 {
		return append([]string(nil), d.ConfigModels...), ModelsConfig
	}
	if len(d.Models.Fallback) > 0 {
		return append([]string(nil), d.Models.Fallback...), ModelsFallback
	}
	return nil, ""
}

// childEnv is base plus the definition's env (which wins).
func childEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// Errors of a probe command; the messages name the command.
var (
	errProbeTimeout = errors.New("timed out")
	errNoVersion    = errors.New("printed no version")
)

func probeVersion(ctx context.Context, d Definition, path, dir string, env []string, opts ProbeOptions) (string, error) {
	if d.Version.File != "" {
		return fileVersion(d, path)
	}
	args := d.Version.Args
	if len(args) == 0 {
		args = []string{"--version"}
	}
	timeout := d.Version.Timeout
	if timeout <= 0 {
		timeout = opts.VersionTimeout
	}
	out, err := runProbe(ctx, timeout, path, dir, args, env)
	cmd := filepath.Base(path) + " " + strings.Join(args, " ")
	if err != nil {
		return "", fmt.Errorf("version probe `%s`: %w", cmd, err)
	}
	pat := d.Version.Pattern
	if pat == nil {
		pat = DefaultVersionPattern
	}
	v := matchVersion(pat, out)
	if v == "" {
		return "", fmt.Errorf("version probe `%s`: %w: %q", cmd, errNoVersion, excerpt(out, 120))
	}
	return v, nil
}

// fileVersion reads d.Version.File beside the real path of the executable.
func fileVersion(d Definition, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("version file: %w", err)
	}
	f := filepath.Join(filepath.Dir(real), filepath.FromSlash(d.Version.File))
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("version file: %w", err)
	}
	pat := d.Version.Pattern
	if pat == nil {
		pat = DefaultVersionPattern
	}
	if v := matchVersion(pat, string(b)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("version file %s: %w", f, errNoVersion)
}

func matchVersion(pat *regexp.Regexp, out string) string {
	m := pat.FindStringSubmatch(out)
	switch {
	case m == nil:
		return ""
	case len(m) > 1 && m[1] != "":
		return m[1]
	}
	return m[0]
}

func listModels(ctx context.Context, d Definition, path, dir string, env []string, opts ProbeOptions) (models []string, src ModelSource, problem string) {
	fallback := func(p string) ([]string, ModelSource, string) {
		if len(d.Models.Fallback) == 0 {
			return nil, "", p
		}
		return append([]string(nil), d.Models.Fallback...), ModelsFallback, p
	}
	switch {
	case d.Models.Command != nil:
		c := d.Models.Command
		timeout := c.Timeout
		if timeout <= 0 {
			timeout = opts.ModelTimeout
		}
		out, err := runProbe(ctx, timeout, path, dir, c.Args, env)
		cmd := filepath.Base(path) + " " + strings.Join(c.Args, " ")
		if err != nil {
			return fallback(fmt.Sprintf("model list `%s`: %v", cmd, err))
		}
		parse := c.Parse
		if parse == nil {
			parse = ParseLines
		}
		if ids := parse(out); len(ids) > 0 {
			return ids, ModelsLive, ""
		}
		return fallback(fmt.Sprintf("model list `%s`: no models in its output", cmd))
	case d.Models.Discover != nil:
		dctx, cancel := context.WithTimeout(ctx, opts.ModelTimeout)
		defer cancel()
		ids, err := d.Models.Discover(dctx, path, env)
		if err != nil {
			return fallback(fmt.Sprintf("model discovery: %v", err))
		}
		if len(ids) > 0 {
			return ids, ModelsLive, ""
		}
		return fallback("model discovery: no models")
	}
	return fallback("")
}

// runProbe runs path args with a timeout, stdin closed, and returns stdout
// followed by stderr (bounded). It starts through procrun as a run does, so
// ctx's isolation and sandbox apply (ProbeOptions.Confine). A non-zero exit
// is an error carrying the output's tail; so is a timeout, after the
// process and its group were killed.
func runProbe(ctx context.Context, timeout time.Duration, path, dir string, args, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if env == nil {
		env = []string{}
	}
	p, err := procrun.Start(ctx, nil, procrun.Spec{Bin: path, Args: args, Dir: dir, Env: env})
	if err != nil {
		return "", err
	}
	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = p.Kill(); close(killed) })
	var stdout boundedBuffer
	stdout.max = maxProbeOutput
	_ = p.Each(func(line []byte) error {
		_, _ = stdout.Write(append(line, '\n'))
		return nil
	})
	err = p.Wait()
	if !stop() {
		<-killed
	}
	out := stdout.String()
	var pe *procrun.ProcessError
	if errors.As(err, &pe) || err == nil {
		s := p.Stderr()
		if len(s) > maxProbeOutput {
			s = s[:maxProbeOutput]
		}
		if s != "" {
			if out != "" && !strings.HasSuffix(out, "\n") {
				out += "\n"
			}
			out += s
		}
	}
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return out, fmt.Errorf("%w after %s", errProbeTimeout, timeout)
	case ctx.Err() != nil:
		return out, ctx.Err()
	case err != nil:
		if tail := excerpt(out, 200); tail != "" {
			if pe != nil {
				return out, fmt.Errorf("exit status %d: %s", pe.ExitCode, tail)
			}
			return out, fmt.Errorf("%w: %s", err, tail)
		}
		return out, err
	}
	return out, nil
}

// boundedBuffer keeps the first max bytes written and discards the rest.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }

var _ io.Writer = (*boundedBuffer)(nil)

// excerpt folds s into one trimmed line of at most n bytes (its tail).
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := len(s) - n
		for cut < len(s) && s[cut]&0xC0 == 0x80 {
			cut++
		}
		s = "…" + s[cut:]
	}
	return s
}

// CheckAuth tells, without running the CLI, what Probe reports as d's
// sign-in state and detail (only names and paths). opts.Getenv and opts.Home
// default as in Probe; the other options are not used.
func CheckAuth(d Definition, opts ProbeOptions) (AuthState, string) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	return checkAuth(d, opts)
}

// checkAuth applies d.Auth. Only names and paths are reported.
//
// A key counts when it is in the agent's configured env (d.Env) or in the
// host environment: the credential variables of Auth.Env pass from the host
// to this agent (see HostEnvNames).
func checkAuth(d Definition, opts ProbeOptions) (AuthState, string) {
	a := d.Auth
	if len(a.Env) == 0 && len(a.Files) == 0 {
		if a.Note != "" {
			return AuthUnknown, a.Note
		}
		return AuthUnknown, "no sign-in check for this CLI"
	}
	lookup := func(k string) string {
		if v, ok := d.Env[k]; ok {
			return v
		}
		return opts.Getenv(k)
	}
	for _, k := range a.Env {
		if d.Env[k] != "" {
			return AuthOK, k + " set in the agent's env"
		}
	}
	for _, k := range a.Env {
		if opts.Getenv(k) != "" {
			return AuthOK, k + " set in the environment"
		}
	}
	home := opts.Home
	if h := d.Env["HOME"]; h != "" {
		home = h
	}
	var tried []string
	for _, f := range a.Files {
		p, ok := expandPath(f, home, lookup)
		if !ok {
			continue
		}
		shown := tildePath(p, home)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return AuthOK, "credentials file " + shown
		}
		if !slices.Contains(tried, shown) {
			tried = append(tried, shown)
		}
	}
	detail := "no " + strings.Join(append(append([]string(nil), a.Env...), tried...), ", no ")
	if a.Note != "" {
		detail += "; " + a.Note
	}
	return AuthMissing, detail
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandPath expands "~/" (home) and ${VAR} (lookup) in p, a path of
// AuthCheck.Files or StateSpec.Shared; ok is false when a variable is unset
// or empty, or p starts with "~/" and home is empty.
func ExpandPath(p, home string, lookup func(string) string) (string, bool) {
	return expandPath(p, home, lookup)
}

// expandPath expands "~/" and ${VAR}; ok is false when a variable is unset.
func expandPath(p, home string, lookup func(string) string) (string, bool) {
	ok := true
	p = varRef.ReplaceAllStringFunc(p, func(m string) string {
		v := lookup(varRef.FindStringSubmatch(m)[1])
		if v == "" {
			ok = false
		}
		return v
	})
	if !ok {
		return "", false
	}
	if strings.HasPrefix(p, "~/") {
		if home == "" {
			return "", false
		}
		p = filepath.Join(home, p[2:])
	}
	return p, true
}

func tildePath(p, home string) string {
	if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
		return "~" + p[len(home):]
	}
	return p
}
