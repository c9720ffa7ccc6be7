package convention

import (
	"bufio"
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// shared are the folders every binary may link: api/ (the API contract
// and the client library) and internal/ (code two components need that is
// not API, such as internal/netns; it imports nothing of the components).
var shared = []string{"api", "internal"}

// allowed names, per binary (its folder), the folders of this module its
// packages may come from besides the shared ones and its own folder. A new
// binary needs a line here.
var allowed = map[string][]string{
	// The all-in-one composes every component in one process.
	"cmd/tugboat":            {"apiserver", "scheduler", "controllers", "kubelet", "proxy"},
	"cmd/apiserver":          {"apiserver"},
	"cmd/scheduler":          {"scheduler"},
	"cmd/controller-manager": {"controllers"},
	"cmd/kubelet":            {"kubelet"},
	"cmd/proxy":              {"proxy"},
	"cmd/tugctl":             nil,
	// The images' own programs.
	"deploy/tugboat-init":  nil,
	"deploy/etcd":          nil,
	"deploy/examples/echo": nil,
	"deploy/pause":         nil,
}

// edge is one import: a package (by its folder in the module) importing
// another.
type edge struct{ from, to string }

// exceptions are imports that break the rules today, each with what
// removes it; their targets (and what those import) are not checked. Keep
// the list empty.
var exceptions = map[edge]string{}

// pkg is one package of the module as go list reports it.
type pkg struct {
	path    string // the folder in the module, "" for the root
	main    bool
	imports []string // module folders it imports
}

// modulePackages runs `go list -deps` over every package of the module and
// returns the module's packages by folder.
func modulePackages(t *testing.T) (map[string]*pkg, string) {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(mod)) + "/"
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Name}} {{join .Imports \" \"}}", prefix+"...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], prefix) {
			continue // the standard library and other modules
		}
		p := &pkg{path: strings.TrimPrefix(f[0], prefix), main: f[1] == "main"}
		for _, imp := range f[2:] {
			if strings.HasPrefix(imp, prefix) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, prefix))
			}
		}
		pkgs[p.path] = p
	}
	return pkgs, prefix
}

// under reports whether folder path is dir or inside it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// excepted returns the exception that allows the import from -> to.
func excepted(from, to string) (edge, bool) {
	for e := range exceptions {
		if under(from, e.from) && under(to, e.to) {
			return e, true
		}
	}
	return edge{}, false
}

// TestBinariesLinkOnlyTheirComponent walks each binary's imports within
// the module and fails on a package from a folder the binary may not use,
// naming the chain of imports that pulled it in.
func TestBinariesLinkOnlyTheirComponent(t *testing.T) {
	pkgs, _ := modulePackages(t)
	used := map[edge]bool{}
	var bins []string
	for path, p := range pkgs {
		if p.main && (under(path, "cmd") || under(path, "deploy")) {
			bins = append(bins, path)
		}
	}
	sort.Strings(bins)
	if len(bins) < 7 {
		t.Fatalf("found only the binaries %v: go list did not see the module", bins)
	}
	for _, bin := range bins {
		extra, ok := allowed[bin]
		if !ok {
			t.Errorf("%s: a binary without a rule: add the folders it may use to allowed in %s", bin, "hack/convention/deps_test.go")
			continue
		}
		mayUse := func(path string) bool {
			if under(path, bin) {
				return true
			}
			for _, d := range shared {
				if under(path, d) {
					return true
				}
			}
			for _, d := range extra {
				if under(path, d) {
					return true
				}
			}
			return false
		}
		// Breadth first from the main package, remembering who imported
		// whom so that a violation names its chain.
		via := map[string]string{bin: ""}
		queue := []string{bin}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for _, imp := range pkgs[cur].imports {
				if _, seen := via[imp]; seen {
					continue
				}
				if e, ok := excepted(cur, imp); ok {
					used[e] = true
					continue
				}
				via[imp] = cur
				if !mayUse(imp) {
					chain := []string{imp}
					for p := cur; p != ""; p = via[p] {
						chain = append([]string{p}, chain...)
					}
					t.Errorf("%s links %s, which it may not (it may use %v, %s/ and %v): %s",
						bin, imp, shared, bin, extra, strings.Join(chain, " -> "))
					continue
				}
				queue = append(queue, imp)
			}
		}
	}
	for e, why := range exceptions {
		if !used[e] {
			t.Logf("the exception %s -> %s (%s) is no longer needed: remove it from exceptions", e.from, e.to, why)
		}
	}
}

// TestInternalImportsNothingElse: internal/ is shared by components, so it
// may import nothing of the module outside itself (not a component, not
// api/, not e2e/ or hack/).
func TestInternalImportsNothingElse(t *testing.T) {
	pkgs, _ := modulePackages(t)
	for path, p := range pkgs {
		if !under(path, "internal") {
			continue
		}
		for _, imp := range p.imports {
			if !under(imp, "internal") {
				t.Errorf("%s imports %s: internal/ may import only internal/", path, imp)
			}
		}
	}
}
