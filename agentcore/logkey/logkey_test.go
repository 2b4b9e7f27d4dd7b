package logkey_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// notConverted lists the files (relative to the module root) whose log keys
// are not converted to this package's set yet, because another change owns
// them right now. Each entry is temporary: convert the file, then delete its
// line here (the test fails on an entry whose file has no unknown key left).
var notConverted = []string{
	"agentcore/procrun/launch.go",       // "provider" (logkey.Agent)
	"agentcore/procrun/session.go",      // "provider"
	"chatops/outbox/outbox.go",          // "id", "in"
	"chatops/threads.go",                // "chat"
	"cmd/threadline/serve.go",           // "front-ends"
	"providers/acp/acp.go",              // "provider"
	"providers/claude/claude.go",        // "provider"
	"providers/codexharness/harness.go", // "provider", "id"
}

// TestKeysKnown parses every non-test Go file of the module and fails on a
// slog call whose key is a string literal that is not one of this package's
// constants: a key named differently in two places (or made up for one line)
// is caught here, not when someone greps the logs for a run.
func TestKeysKnown(t *testing.T) {
	known := constants(t, ".")
	root := moduleRoot(t)
	dirs := goFiles(t, root)
	type file struct {
		name string
		ast  *ast.File
	}
	fset := token.NewFileSet()
	var files []file
	var all []*ast.File
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		for _, p := range dirs[dir] {
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, file{filepath.ToSlash(rel), f})
			all = append(all, f)
		}
	}
	loggers := loggerNames(all) // module-wide: procrun's Conn.Logger() is called in providers
	var problems []string
	bad := map[string]bool{}
	for _, f := range files {
		for _, p := range unknownKeys(fset, f.ast, loggers, known) {
			if slices.Contains(notConverted, f.name) {
				bad[f.name] = true
				continue
			}
			problems = append(problems, f.name+":"+p)
		}
	}
	for _, p := range problems {
		t.Errorf("%s: not a logkey constant (use one, or add a constant to logkey.go)", p)
	}
	for _, f := range notConverted {
		if !bad[f] {
			t.Errorf("%s is in notConverted but logs with known keys only: delete its entry", f)
		}
	}
}

// TestUnknownKeysFound shows that the scan finds a literal key in each
// position slog reads one from, and leaves other calls alone.
func TestUnknownKeysFound(t *testing.T) {
	const src = `package p

import "log/slog"

type server struct{ log *slog.Logger }

func (s *server) Logger() *slog.Logger { return s.log }

func f(ctx context.Context, s *server, logger *slog.Logger, w http.ResponseWriter, t *testing.T) {
	s.log.InfoContext(ctx, "msg", "chat", 1, "err", nil)
	logger.Warn("msg", "run_id", 1, slog.String("interaction", "x"), "bytes", 2, "Run", 3)
	l := logger.With("thread", 1)
	l.Error("msg", slog.Group("g", "inner", 1), slog.Any("err", nil))
	s.Logger().Log(ctx, slog.LevelInfo, "msg", "session", 1)
	slog.Debug("msg", "pid", 1, "worker", 2)
	_ = slog.Attr{Key: "attr_key"}
	http.Error(w, "not a key", 500)
	t.Error("not a key", "either")
	fmt.Println("msg", "nor this")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"run_id": true, "err": true, "bytes": true, "pid": true}
	var got []string
	for _, p := range unknownKeys(fset, f, loggerNames([]*ast.File{f}), known) {
		got = append(got, p[strings.Index(p, " ")+1:])
	}
	want := []string{`"chat"`, `"interaction"`, `"Run"`, `"thread"`, `"g"`, `"inner"`, `"session"`, `"worker"`, `"attr_key"`}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("unknown keys = %v, want %v", got, want)
	}
}

// logMethods maps a *slog.Logger method (or slog function) to the index of
// its first key/value argument.
var logMethods = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0,
}

// attrFuncs are the slog functions whose first argument is a key.
var attrFuncs = map[string]bool{
	"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true,
}

// unknownKeys returns "line: key" for each literal key in f not in known.
func unknownKeys(fset *token.FileSet, f *ast.File, loggers map[string]bool, known map[string]bool) []string {
	var out []string
	check := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		if k, err := strconv.Unquote(lit.Value); err == nil && !known[k] {
			out = append(out, fmt.Sprintf("%d: %s", fset.Position(lit.Pos()).Line, lit.Value))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if isSlog(n.Type, "Attr") {
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Key") {
						check(kv.Value)
					}
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if isIdent(sel.X, "slog") && attrFuncs[sel.Sel.Name] {
				if len(n.Args) > 0 {
					check(n.Args[0])
				}
				if sel.Sel.Name == "Group" {
					keyValues(n.Args[1:], check)
				}
				return true
			}
			first, ok := logMethods[sel.Sel.Name]
			if ok && len(n.Args) > first && (isIdent(sel.X, "slog") || isLogger(sel.X, loggers)) {
				keyValues(n.Args[first:], check)
			}
		}
		return true
	})
	return out
}

// keyValues calls check on each key of slog's alternating key/value
// arguments; an slog.Attr (or any other non-key expression) takes one place.
func keyValues(args []ast.Expr, check func(ast.Expr)) {
	for i := 0; i < len(args); i++ {
		switch a := args[i].(type) {
		case *ast.BasicLit:
			check(a)
			i++
		case *ast.SelectorExpr:
			if isIdent(a.X, "logkey") {
				i++
			}
		}
	}
}

// loggerNames returns the names under which files hold a *slog.Logger:
// fields, parameters and variables of that type, functions and methods
// returning one, and variables assigned from a logger's With or slog.New.
func loggerNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if isLoggerType(n.Type) {
					for _, id := range n.Names {
						names[id.Name] = true
					}
				}
			case *ast.ValueSpec:
				if n.Type != nil && isLoggerType(n.Type) {
					for _, id := range n.Names {
						names[id.Name] = true
					}
				}
			case *ast.FuncDecl:
				if r := n.Type.Results; r != nil && len(r.List) == 1 && isLoggerType(r.List[0].Type) {
					names[n.Name.Name] = true
				}
			}
			return true
		})
	}
	for range 2 { // a With of a With
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Lhs) != len(as.Rhs) {
					return true
				}
				for i, r := range as.Rhs {
					c, ok := r.(*ast.CallExpr)
					if !ok {
						continue
					}
					sel, ok := c.Fun.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					fromLogger := sel.Sel.Name == "With" && isLogger(sel.X, names)
					fromSlog := isIdent(sel.X, "slog") && (sel.Sel.Name == "New" || sel.Sel.Name == "Default" || sel.Sel.Name == "With")
					if id, ok := as.Lhs[i].(*ast.Ident); ok && (fromLogger || fromSlog) {
						names[id.Name] = true
					}
				}
				return true
			})
		}
	}
	return names
}

// isLogger reports whether e names a logger: x, a.x or a.x() with x in names.
func isLogger(e ast.Expr, names map[string]bool) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return names[e.Name]
	case *ast.SelectorExpr:
		return names[e.Sel.Name]
	case *ast.CallExpr:
		return len(e.Args) == 0 && isLogger(e.Fun, names)
	}
	return false
}

func isLoggerType(e ast.Expr) bool {
	s, ok := e.(*ast.StarExpr)
	return ok && isSlog(s.X, "Logger")
}

func isSlog(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && isIdent(sel.X, "slog") && sel.Sel.Name == name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// constants returns the values of the string constants declared in the
// non-test files of the package in dir.
func constants(t *testing.T, dir string) map[string]bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						k, _ := strconv.Unquote(lit.Value)
						if out[k] {
							t.Errorf("key %q declared twice", k)
						}
						out[k] = true
					}
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d keys found in %s", len(out), dir)
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

// goFiles maps each directory of the module to its non-test Go files,
// leaving out testdata, node_modules and hidden directories.
func goFiles(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			out[filepath.Dir(p)] = append(out[filepath.Dir(p)], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d package directories under %s", len(out), root)
	}
	return out
}
