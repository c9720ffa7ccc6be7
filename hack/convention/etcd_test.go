package convention

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// etcdAllowed are the files and folders (relative to the module root) that
// may import an etcd package (go.etcd.io/...): apiserver/storage is the
// door (its doc says what it holds), the apiserver's start-up starts and
// dials etcd and hands the client to storage, the test server lets tests
// look at values at rest, and deploy/etcd is the etcd image's program.
var etcdAllowed = []string{
	"apiserver/storage",
	"apiserver/etcd.go",
	"apiserver/server.go",
	"apiserver/apiservertest",
	"deploy/etcd",
}

// TestOnlyStorageTalksToEtcd parses the imports of every non-test Go file
// of the module and fails on an etcd import outside etcdAllowed. (Tests
// may look at etcd: apiservertest.Server.Etcd is their door.)
func TestOnlyStorageTalksToEtcd(t *testing.T) {
	root := "../.."
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "go.etcd.io/") && !etcdMayImport(rel) {
				t.Errorf("%s imports %s: only apiserver/storage talks to etcd (see its package doc); go through storage.Store", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read only %d Go files: not the module root?", n)
	}
}

func etcdMayImport(rel string) bool {
	for _, a := range etcdAllowed {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return true
		}
	}
	return false
}
