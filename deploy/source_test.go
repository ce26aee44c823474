package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This file reads facts out of the sources: the flags of each tandem
// command (cmd/tandem) and the HTTP routes of a frontend (frontend/server),
// so the deploy files are checked against the code, not against a copy.

// flagSet is a command's flags: name → whether it is a bool flag.
type flagSet map[string]bool

// commandRoots maps each tandem subcommand to the function that parses
// its flags.
var commandRoots = map[string]string{"serve": "runServe", "engine": "runEngine", "frontend": "runFrontend"}

// commandFlags returns the flags of every tandem subcommand, read from
// the Go sources in dir: the flags a command's function registers, plus
// those registered by the package's functions it calls, transitively.
func commandFlags(dir string) (map[string]flagSet, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	funcs := map[string][]*ast.FuncDecl{} // by name (methods too)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				funcs[fd.Name.Name] = append(funcs[fd.Name.Name], fd)
			}
		}
	}
	out := map[string]flagSet{}
	for cmd, root := range commandRoots {
		if len(funcs[root]) == 0 {
			return nil, fmt.Errorf("%s: no function %s for tandem %s", dir, root, cmd)
		}
		fs := flagSet{}
		seen := map[string]bool{}
		queue := []string{root}
		for len(queue) > 0 {
			name := queue[0]
			queue = queue[1:]
			if seen[name] {
				continue
			}
			seen[name] = true
			for _, fd := range funcs[name] {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if flag, isBool, ok := flagRegistration(call); ok {
						fs[flag] = isBool
					}
					switch fn := call.Fun.(type) {
					case *ast.Ident:
						queue = append(queue, fn.Name)
					case *ast.SelectorExpr:
						queue = append(queue, fn.Sel.Name)
					}
					return true
				})
			}
		}
		out[cmd] = fs
	}
	return out, nil
}

// flagRegistration recognises fs.StringVar(&v, "name", …), fs.Int("name",
// …) and their kin, returning the flag's name and whether it is a bool.
func flagRegistration(call *ast.CallExpr) (name string, isBool, ok bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false, false
	}
	method := sel.Sel.Name
	var arg int // index of the name argument
	switch method {
	case "String", "Int", "Int64", "Uint", "Uint64", "Bool", "Duration", "Float64", "Func", "BoolFunc":
		arg = 0
	case "StringVar", "IntVar", "Int64Var", "UintVar", "Uint64Var", "BoolVar", "DurationVar", "Float64Var", "Var", "TextVar":
		arg = 1
	default:
		return "", false, false
	}
	if len(call.Args) <= arg+1 {
		return "", false, false
	}
	lit, ok := call.Args[arg].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false, false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil || s == "" {
		return "", false, false
	}
	return s, method == "Bool" || method == "BoolVar" || method == "BoolFunc", true
}

// httpRoutes returns the GET paths a frontend serves, read from the
// e.GET("/path", …) calls in dir.
func httpRoutes(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	routes := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GET" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if p, err := strconv.Unquote(lit.Value); err == nil {
					routes[p] = true
				}
			}
			return true
		})
	}
	return routes, nil
}

// parsedArgs is a command line: the subcommand and its flags.
type parsedArgs struct {
	cmd   string
	flags map[string]string // by name without dashes
}

// parseArgs splits `cmd --a=1 --b 2 --c` the way Go's flag package does,
// rejecting flags fs does not define.
func parseArgs(args []string, all map[string]flagSet) (parsedArgs, error) {
	if len(args) == 0 {
		return parsedArgs{}, fmt.Errorf("empty command")
	}
	p := parsedArgs{cmd: args[0], flags: map[string]string{}}
	fs, ok := all[p.cmd]
	if !ok {
		return p, fmt.Errorf("unknown tandem command %q", p.cmd)
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return p, fmt.Errorf("tandem %s: unexpected argument %q", p.cmd, a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isBool, ok := fs[name]
		if !ok {
			return p, fmt.Errorf("tandem %s: no flag --%s", p.cmd, name)
		}
		if !hasVal {
			if isBool {
				val = "true"
			} else if i+1 < len(args) {
				i++
				val = args[i]
			} else {
				return p, fmt.Errorf("tandem %s: --%s needs a value", p.cmd, name)
			}
		}
		if _, dup := p.flags[name]; dup {
			return p, fmt.Errorf("tandem %s: --%s given twice", p.cmd, name)
		}
		p.flags[name] = val
	}
	return p, nil
}

func TestCommandFlagsFromSource(t *testing.T) {
	all, err := commandFlags("../cmd/tandem")
	if err != nil {
		t.Fatal(err)
	}
	// Flags the deploy files rely on; the scan must find them.
	want := map[string][]string{
		"engine":   {"block-size", "device", "events", "kv-cache-memory", "listen", "log-format", "max-model-len", "model", "threads"},
		"frontend": {"api-key", "engines", "host", "log-format", "port"},
		"serve":    {"data-parallel-size", "host", "model", "port"},
	}
	for cmd, names := range want {
		var missing []string
		for _, n := range names {
			if _, ok := all[cmd][n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			t.Errorf("tandem %s: flags %v not found in ../cmd/tandem (found %v)", cmd, missing, keys(all[cmd]))
		}
	}
	if isBool := all["engine"]["enable-prefix-caching"]; !isBool {
		t.Errorf("--enable-prefix-caching should be a bool flag")
	}
}

func TestParseArgs(t *testing.T) {
	all := map[string]flagSet{"engine": {"listen": false, "enable-prefix-caching": true, "threads": false}}
	tests := []struct {
		name    string
		args    []string
		want    map[string]string
		wantErr bool
	}{
		{"equals", []string{"engine", "--listen=tcp://0.0.0.0:5555"}, map[string]string{"listen": "tcp://0.0.0.0:5555"}, false},
		{"separate", []string{"engine", "--threads", "4", "-listen", "x"}, map[string]string{"threads": "4", "listen": "x"}, false},
		{"bool", []string{"engine", "--enable-prefix-caching", "--threads=2"}, map[string]string{"enable-prefix-caching": "true", "threads": "2"}, false},
		{"unknown flag", []string{"engine", "--listn=x"}, nil, true},
		{"unknown command", []string{"engin"}, nil, true},
		{"missing value", []string{"engine", "--threads"}, nil, true},
		{"twice", []string{"engine", "--threads=1", "--threads=2"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args, all)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, got.flags); diff != "" {
					t.Errorf("flags (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestHTTPRoutesFromSource(t *testing.T) {
	routes, err := httpRoutes("../frontend/server")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/health", "/version", "/metrics"} {
		if !routes[p] {
			t.Errorf("route %s not found in ../frontend/server (found %v)", p, keys(routes))
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
