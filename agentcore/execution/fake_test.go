// fakeLXD: a state-based stand-in for LXD at the preparer's seam.

package execution

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

type fakeInstance struct {
	image    string
	profiles []string
	running  bool
	config   map[string]string
	devices  map[string]string // name -> "source:path:shift"
	dirs     map[string]bool
	files    map[string]fakeFile
	links    map[string]string
	bins     map[string]bool
}

type fakeFile struct {
	data []byte
	mode os.FileMode
}

// fakeLXD models instances so tests assert on the resulting state; errs
// injects a failure per operation ("start", "create", "adddisk:shift", ...).
type fakeLXD struct {
	mu        sync.Mutex
	instances map[string]*fakeInstance // by ref
	images    map[string]bool
	errs      map[string]error
	calls     []string
	// binsOnCreate are the executables a created instance has.
	binsOnCreate []string
}

func newFakeLXD() *fakeLXD {
	return &fakeLXD{instances: map[string]*fakeInstance{}, images: map[string]bool{"img": true, "other": true}, errs: map[string]error{}}
}

// add registers an existing instance.
func (f *fakeLXD) add(ref string, running bool, bins ...string) *fakeInstance {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := &fakeInstance{running: running, config: map[string]string{}, devices: map[string]string{},
		dirs: map[string]bool{"/": true, "/root": true}, files: map[string]fakeFile{}, links: map[string]string{}, bins: map[string]bool{}}
	for _, b := range bins {
		in.bins[b] = true
	}
	f.instances[ref] = in
	return in
}

func (f *fakeLXD) get(ref string) *fakeInstance {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.instances[ref]
}

func (f *fakeLXD) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == op || strings.HasPrefix(c, op+" ") {
			n++
		}
	}
	return n
}

func (f *fakeLXD) enter(op string, in Instance) (*fakeInstance, error) {
	f.calls = append(f.calls, op+" "+in.Ref())
	if err := f.errs[op]; err != nil {
		return nil, err
	}
	i, ok := f.instances[in.Ref()]
	if !ok {
		return nil, fmt.Errorf("%s: %w", op, ErrInstanceNotFound)
	}
	return i, nil
}

func (f *fakeLXD) Start(ctx context.Context, in Instance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.enter("start", in)
	if err != nil {
		return err
	}
	i.running = true
	return nil
}

func (f *fakeLXD) Create(ctx context.Context, in Instance, image string, profiles []string) error {
	f.mu.Lock()
	f.calls = append(f.calls, "create "+in.Ref())
	if err := f.errs["create"]; err != nil {
		f.mu.Unlock()
		return err
	}
	if _, ok := f.instances[in.Ref()]; ok {
		f.mu.Unlock()
		return fmt.Errorf("create: instance %s already exists", in.Ref())
	}
	if !f.images[image] {
		f.mu.Unlock()
		return fmt.Errorf("create: %w", ErrImageNotFound)
	}
	f.mu.Unlock()
	i := f.add(in.Ref(), false, f.binsOnCreate...)
	i.image, i.profiles = image, profiles
	return nil
}

func (f *fakeLXD) SetConfig(ctx context.Context, in Instance, key, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.enter("config", in)
	if err != nil {
		return err
	}
	i.config[key] = value
	return nil
}

func (f *fakeLXD) AddDisk(ctx context.Context, in Instance, name, source, path string, shift bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "adddisk"
	if shift {
		op = "adddisk:shift"
	}
	i, err := f.enter(op, in)
	if err != nil {
		return err
	}
	i.devices[name] = fmt.Sprintf("%s:%s:%v", source, path, shift)
	i.dirs[path] = true
	return nil
}

func (f *fakeLXD) Exec(ctx context.Context, in Instance, argv []string, stdin []byte) (ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.enter("exec", in)
	if err != nil {
		return ExecResult{}, err
	}
	if !i.running {
		return ExecResult{ExitCode: 1}, fmt.Errorf("exec: %w", ErrInstanceNotRunning)
	}
	switch {
	case len(argv) >= 5 && argv[0] == "sh" && argv[2] == prepareScript:
		for _, d := range argv[5:] {
			if !strings.HasPrefix(d, "/") {
				return ExecResult{ExitCode: 90, Stderr: []byte("mkdir: bad path")}, nil
			}
			i.dirs[d] = true
		}
		if !i.bins[argv[4]] {
			return ExecResult{ExitCode: 91}, nil
		}
		return ExecResult{}, nil
	case len(argv) >= 4 && argv[0] == "sh" && argv[2] == linkScript:
		for j := 4; j+1 < len(argv); j += 2 {
			i.links[argv[j+1]] = argv[j]
		}
		return ExecResult{}, nil
	}
	return ExecResult{ExitCode: 127}, fmt.Errorf("exec %q: %w", argv[0], ErrCommandNotFound)
}

func (f *fakeLXD) Push(ctx context.Context, in Instance, path string, content []byte, mode os.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.enter("push", in)
	if err != nil {
		return err
	}
	if !i.dirs[dirOf(path)] {
		return fmt.Errorf("push %s: %w", path, ErrFileNotFound)
	}
	i.files[path] = fakeFile{data: slices.Clone(content), mode: mode}
	return nil
}

func (f *fakeLXD) Pull(ctx context.Context, in Instance, path string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.enter("pull", in)
	if err != nil {
		return nil, err
	}
	file, ok := i.files[path]
	if !ok {
		return nil, fmt.Errorf("pull %s: %w", path, ErrFileNotFound)
	}
	return slices.Clone(file.data), nil
}

func (f *fakeLXD) Delete(ctx context.Context, in Instance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.enter("delete", in); err != nil {
		return err
	}
	delete(f.instances, in.Ref())
	return nil
}

func (f *fakeLXD) List(ctx context.Context, remote string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for ref, i := range f.instances {
		st := "Stopped"
		if i.running {
			st = "Running"
		}
		out[ref] = st
	}
	return out, nil
}

func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// fakeProjects is an in-memory Projects.
type fakeProjects struct {
	mu         sync.Mutex
	projects   map[string]Project
	secrets    map[string][]agent.EnvVar
	secretsErr error
}

func (p *fakeProjects) Project(ctx context.Context, name string) (Project, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.projects[name]
	if !ok {
		return Project{}, fmt.Errorf("%w: %s", ErrProjectNotFound, name)
	}
	return pr, nil
}

func (p *fakeProjects) ProjectSecrets(ctx context.Context, name string) ([]agent.EnvVar, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.secretsErr != nil {
		return nil, p.secretsErr
	}
	return p.secrets[name], nil
}

func (p *fakeProjects) SetProjectStatus(ctx context.Context, name, status string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.projects[name]
	if !ok {
		return ErrProjectNotFound
	}
	pr.Status = status
	p.projects[name] = pr
	return nil
}

func (p *fakeProjects) status(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.projects[name].Status
}
