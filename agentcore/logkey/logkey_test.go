package logkey_test

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const logkeyPath = "github.com/threadline-bot/threadline/agentcore/logkey"

// notConverted lists the (file, key) pairs (file relative to the module
// root) not converted to this package's set yet, because another change owns
// the file right now. Only the pair is let through: a new unknown key in the
// same file still fails. Each entry is temporary: convert the key, then
// delete its line here (the test fails on an entry that matches nothing).
var notConverted = []struct{ file, key string }{}

// passThrough lists the (file, expression) pairs where a key that is not
// a constant is right: a slog handler that rebuilds an attribute under its
// own key, a bridge that forwards another library's keys.
var passThrough = []struct{ file, expr string }{
	{"agentcore/redact/redact.go", "a.Key"}, // the redacting handler keeps each attribute's key
	{"bot/matrix/logbridge.go", "k"},        // mautrix's zerolog fields, forwarded
}

// extraTags are the build tags under which files excluded from the default
// build log too (bot/matrix's crypto_goolm.go); the packages with such files
// are type-checked once more under them.
var extraTags = []string{"goolm"}

// TestKeysKnown type-checks every package of the module (its non-test files)
// and fails on a key of a slog call that is not one of this package's
// constants by value: a key named differently in two places (or made up for
// one line) is caught here, not when someone greps the logs for a run. The
// calls are found by type, not by name: any *slog.Logger (a field, a copy, a
// With chain, slog.Default()), slog's functions, slog.Attr literals; a key
// held in any constant is checked by its value. What it cannot follow is
// reported instead: a key that is not a constant, a slog function used as a
// value. Keys passed through a module function of its own that forwards
// args... to slog are not seen.
func TestKeysKnown(t *testing.T) {
	root := moduleRoot(t)
	pkgs := load(t, root, nil, "./...")
	known := constants(t, pkgs)

	checked := map[string]bool{} // files type-checked in some build
	var ignored []string
	seen := map[string]bool{}
	var found []finding
	scanAll := func(pkgs []*packages.Package) {
		for _, p := range pkgs {
			for _, f := range p.Syntax {
				name := p.Fset.Position(f.Package).Filename
				checked[name] = true
				for _, fd := range scan(p.Fset, p.TypesInfo, f, known) {
					if s := fd.String(); !seen[s] {
						seen[s] = true
						found = append(found, fd)
					}
				}
			}
		}
	}
	scanAll(pkgs)
	var again []string
	for _, p := range pkgs {
		if len(p.IgnoredFiles) > 0 {
			again = append(again, p.PkgPath)
			for _, f := range p.IgnoredFiles {
				if !strings.HasSuffix(f, "_test.go") {
					ignored = append(ignored, f)
				}
			}
		}
	}
	if len(again) > 0 {
		scanAll(load(t, root, []string{"-tags=" + strings.Join(extraTags, ",")}, again...))
	}
	unchecked := 0
	for _, name := range ignored {
		if checked[name] {
			continue
		}
		unchecked++
		if logs(t, name) {
			t.Errorf("%s: logs, but no build here type-checks it: add its tag to extraTags", rel(root, name))
		}
	}
	t.Logf("%d packages, %d files type-checked (%d of them only under -tags=%s), %d files of other platforms not logging",
		len(pkgs), len(checked), len(ignored)-unchecked, strings.Join(extraTags, ","), unchecked)

	used := make([]bool, len(notConverted))
	passed := make([]bool, len(passThrough))
	for _, fd := range found {
		file := rel(root, fd.pos.Filename)
		i := slices.IndexFunc(notConverted, func(e struct{ file, key string }) bool {
			return fd.key != "" && e.file == file && e.key == fd.key
		})
		j := slices.IndexFunc(passThrough, func(e struct{ file, expr string }) bool {
			return fd.variable && e.file == file && e.expr == fd.expr
		})
		switch {
		case i >= 0:
			used[i] = true
		case j >= 0:
			passed[j] = true
		default:
			t.Errorf("%s:%d: %s", file, fd.pos.Line, fd.why)
		}
	}
	for i, e := range notConverted {
		if !used[i] {
			t.Errorf("%s %q is in notConverted but not logged there: delete its entry", e.file, e.key)
		}
	}
	for i, e := range passThrough {
		if !passed[i] {
			t.Errorf("%s %s is in passThrough but not a key there: delete its entry", e.file, e.expr)
		}
	}
}

// TestUnknownKeysFound shows that the scan finds a key in each position slog
// reads one from, however the logger is reached, and leaves other calls
// alone.
func TestUnknownKeysFound(t *testing.T) {
	const src = `package p

import (
	"context"
	"log/slog"

	lk "github.com/threadline-bot/threadline/agentcore/logkey"
)

type server struct{ log *slog.Logger }

func (s *server) Logger() *slog.Logger { return s.log }

type embeds struct{ *slog.Logger }

// other has a logger's method names, not its type.
type other struct{}

func (other) Info(msg string, args ...any)             {}
func (other) Error(w any, msg string, code int)        {}
func (other) With(args ...any) other                   { return other{} }
func (other) Log(ctx context.Context, l, m any, a ...any) {}

type kind string

const keyConst = "chat_const"

const keyNamed kind = "run_id"

func f(ctx context.Context, s *server, logger *slog.Logger, o other, k string, e embeds, args []any) {
	s.log.InfoContext(ctx, "msg", "chat", 1, "err", nil)
	logger.Warn("msg", "run_id", 1, slog.String("interaction", "x"), "bytes", 2, "Run", 3)
	l := logger.With("thread", 1)
	l.Error("msg", slog.Group("g", "inner", 1), slog.Any("err", nil))
	s.Logger().Log(ctx, slog.LevelInfo, "msg", "session", 1)
	slog.Debug("msg", "pid", 1, "worker", 2)
	_ = slog.Attr{Key: "attr_key"}
	_ = slog.Attr{"attr_pos", slog.IntValue(1)}
	o.Error(nil, "not a key", 500)
	o.Info("not a key", "either", 1)
	o.With("nor this", 1).Log(ctx, nil, "msg", "nor this")

	logger.With("run_id", 1).Info("chained", "chat1", 2)
	slog.Default().Info("default", "chat2", 1)
	lg := s.log
	lg.Info("copied", "chat3", 1)
	logger.Info("constant", keyConst, 1, "chat4", 2)
	logger.Info("variable", k, "value", "chat5", 2)
	logger.Info("aliased logkey", lk.RunID, "v", "chat6", 1)
	logger.LogAttrs(ctx, slog.LevelInfo, "attrs", slog.Attr{Key: "chat7"}, slog.Int("pid", 1))
	ls := []*slog.Logger{logger}
	ls[0].Info("index", "chat8", 1)
	if l := s.log; l != nil {
		l.Info("if init", "chat9", 1)
	}
	fn := logger.Info
	fn("method value", "chat10", 1)
	logger.Info("group attrs", slog.GroupAttrs("chat11", slog.Int("pid", 1)))
	logger.WithGroup("chat12").Info("group")
	e.Info("embedded", "chat13", 1)
	logger.Info("named string", keyNamed, 1)
	var r slog.Record
	r.Add("chat14", 1, slog.Bool("pid", true))
	logger.Info("odd", "pid")
	logger.Info("forwarded", args...)
	(logger).Info("parens", "chat15", 1)
}
`
	want := []string{
		`"chat"`, `"interaction"`, `"Run"`, `"thread"`, `"g"`, `"inner"`, `"session"`, `"worker"`, `"attr_key"`, `"attr_pos"`,
		`"chat1"`, `"chat2"`, `"chat3"`, `"chat_const"`, `"chat4"`, `k: not a constant`, `"chat5"`, `"chat6"`, `"chat7"`,
		`"chat8"`, `"chat9"`, `logger.Info used as a value`, `"chat11"`, `"chat12"`, `"chat13"`,
		`keyNamed: a p.kind, not a string (slog logs !BADKEY)`, `1: a int, not a string (slog logs !BADKEY)`, `"chat14"`, `"pid": a key without a value`, `"chat15"`,
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]*types.Package{}
	for _, p := range load(t, moduleRoot(t), nil, "context", "log/slog", logkeyPath) {
		deps[p.PkgPath] = p.Types
	}
	info := newInfo()
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p := deps[path]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("%s not loaded", path)
	})}
	if _, err := conf.Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"run_id": true, "err": true, "bytes": true, "pid": true}
	var got []string
	for _, fd := range scan(fset, info, f, known) {
		got = append(got, fd.why)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// finding is a key the scan rejects and why: key is its value, if a
// constant; variable says it is a string that is not a constant.
type finding struct {
	pos      token.Position
	key      string
	expr     string
	variable bool
	why      string
}

func (f finding) String() string { return fmt.Sprintf("%s: %s", f.pos, f.why) }

// kvFrom maps a slog function or method (Type.Method) to the index of its
// first key/value argument.
var kvFrom = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0, "Group": 1,
	"Logger.Debug": 1, "Logger.Info": 1, "Logger.Warn": 1, "Logger.Error": 1,
	"Logger.DebugContext": 2, "Logger.InfoContext": 2, "Logger.WarnContext": 2, "Logger.ErrorContext": 2,
	"Logger.Log": 3, "Logger.With": 0, "Record.Add": 0,
}

// keyFirst are the slog functions and methods whose first argument is a key.
var keyFirst = map[string]bool{
	"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true,
	"GroupAttrs": true, "Logger.WithGroup": true,
}

// scan returns the keys of f's slog calls and slog.Attr literals that are
// not in known, and what it cannot check.
func scan(fset *token.FileSet, info *types.Info, f *ast.File, known map[string]bool) []finding {
	var out []finding
	report := func(e ast.Expr, why string) {
		out = append(out, finding{pos: fset.Position(e.Pos()), expr: types.ExprString(e), why: why})
	}
	checkKey := func(e ast.Expr) {
		tv := info.Types[e]
		if tv.Value == nil || tv.Value.Kind() != constant.String {
			report(e, types.ExprString(e)+": not a constant")
			out[len(out)-1].variable = true
			return
		}
		if k := constant.StringVal(tv.Value); !known[k] {
			report(e, fmt.Sprintf("%q", k))
			out[len(out)-1].key = k
		}
	}
	called := map[ast.Expr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if !isSlog(info.TypeOf(n), "Attr") || len(n.Elts) == 0 {
				return true
			}
			if _, keyed := n.Elts[0].(*ast.KeyValueExpr); !keyed {
				checkKey(n.Elts[0]) // slog.Attr{"key", value}
				return true
			}
			for _, e := range n.Elts {
				if kv := e.(*ast.KeyValueExpr); isIdent(kv.Key, "Key") {
					checkKey(kv.Value)
				}
			}
		case *ast.SelectorExpr:
			fn := slogFunc(info, n.Sel)
			if _, kv := kvFrom[fn]; (kv || keyFirst[fn]) && !called[n] {
				report(n, types.ExprString(n)+" used as a value")
			}
		case *ast.CallExpr:
			fun := ast.Unparen(n.Fun)
			called[fun] = true
			var id *ast.Ident
			switch e := fun.(type) {
			case *ast.SelectorExpr:
				id = e.Sel
			case *ast.Ident:
				id = e
			}
			fn := slogFunc(info, id)
			if fn == "" {
				return true
			}
			if keyFirst[fn] && len(n.Args) > 0 {
				checkKey(n.Args[0])
			}
			if i, ok := kvFrom[fn]; ok && len(n.Args) > i {
				if n.Ellipsis.IsValid() {
					return true // args... forwarded: checked where they are written, if in a slog call
				}
				keyValues(info, n.Args[i:], checkKey, report)
			}
		}
		return true
	})
	return out
}

// keyValues checks the keys of slog's alternating key/value arguments the
// way slog pairs them: a string is a key and takes the next argument as its
// value, an Attr takes one place, anything else is logged as !BADKEY.
func keyValues(info *types.Info, args []ast.Expr, checkKey func(ast.Expr), report func(ast.Expr, string)) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := info.TypeOf(a)
		switch {
		case isSlog(t, "Attr"):
		case isString(t):
			if i == len(args)-1 {
				report(a, types.ExprString(a)+": a key without a value")
				continue
			}
			checkKey(a)
			i++
		default:
			report(a, fmt.Sprintf("%s: a %s, not a string (slog logs !BADKEY)", types.ExprString(a), types.TypeString(t, nil)))
		}
	}
}

// slogFunc names the slog function ("Info") or method ("Logger.Info") that
// id refers to, or returns "".
func slogFunc(info *types.Info, id *ast.Ident) string {
	if id == nil {
		return ""
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "log/slog" {
		return ""
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return fn.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + fn.Name()
	}
	return ""
}

// isString reports whether t is string itself (or an untyped string): slog
// takes only those as keys, not a named string type.
func isString(t types.Type) bool {
	b, ok := types.Unalias(t).(*types.Basic)
	return ok && (b.Kind() == types.String || b.Kind() == types.UntypedString)
}

func isSlog(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "log/slog" && n.Obj().Name() == name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// logs reports whether the Go file at path mentions slog or calls a method
// named like a logger's: a file no build here type-checks must not log.
func logs(t *testing.T, path string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			found = found || n.Name == "slog"
		case *ast.SelectorExpr:
			_, kv := kvFrom["Logger."+n.Sel.Name]
			found = found || kv || n.Sel.Name == "LogAttrs" || n.Sel.Name == "WithGroup"
		}
		return !found
	})
	return found
}

// load type-checks the packages of patterns (their non-test files) from
// dir, with flags; it fails t on any package error, since a package that
// does not type-check cannot be scanned.
func load(t *testing.T, dir string, flags []string, patterns ...string) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{
		Mode:       packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:        dir,
		BuildFlags: flags,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return pkgs
}

func newInfo() *types.Info {
	return &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Defs:  map[*ast.Ident]types.Object{},
		Uses:  map[*ast.Ident]types.Object{},
	}
}

// constants returns the values of this package's string constants, as
// loaded among pkgs; it fails t on a value declared twice.
func constants(t *testing.T, pkgs []*packages.Package) map[string]bool {
	t.Helper()
	i := slices.IndexFunc(pkgs, func(p *packages.Package) bool { return p.PkgPath == logkeyPath })
	if i < 0 {
		t.Fatalf("%s not loaded", logkeyPath)
	}
	scope := pkgs[i].Types.Scope()
	out := map[string]bool{}
	for _, name := range scope.Names() {
		c, ok := scope.Lookup(name).(*types.Const)
		if !ok || c.Val().Kind() != constant.String {
			continue
		}
		k := constant.StringVal(c.Val())
		if out[k] {
			t.Errorf("key %q declared twice", k)
		}
		out[k] = true
	}
	if len(out) < 20 {
		t.Fatalf("only %d keys found in %s", len(out), logkeyPath)
	}
	return out
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

func rel(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}
