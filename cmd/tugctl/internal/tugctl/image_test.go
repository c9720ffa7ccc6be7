package tugctl

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// writeTar writes a tarball of files (in order) to dir/name, gzipped when
// the name ends in .gz, and returns its path and the uncompressed tar.
func writeTar(t *testing.T, dir, name string, files ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, f := range files {
		body := bytes.Repeat([]byte{byte('a' + i)}, 300<<10) // several upload chunks
		if err := tw.WriteHeader(&tar.Header{Name: f, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if strings.HasSuffix(name, ".gz") {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(data)
		zw.Close()
		data = gz.Bytes()
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, buf.Bytes()
}

func readyNode(t *testing.T, e *env, name, ready string) {
	t.Helper()
	mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: name}})
	if ready == "" {
		return
	}
	n, err := client.For[*v1.Node](e.c).Get(ctxT(t), "", name)
	if err != nil {
		t.Fatal(err)
	}
	n.Status = &v1.NodeStatus{Conditions: []*v1.Condition{{Type: "Ready", Status: ready}}}
	if _, err := client.For[*v1.Node](e.c).UpdateStatus(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
}

func TestImageImportAndList(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	n1, n2 := e.startFakeNode("n1"), e.startFakeNode("n2")
	readyNode(t, e, "n1", "True")
	readyNode(t, e, "n2", "True")
	readyNode(t, e, "n3", "False") // no tunnel, and not Ready: skipped by default

	docker, dockerTar := writeTar(t, dir, "app.tar", "layer/layer.tar", "manifest.json")
	r := mustOK(t, e.run("image", "import", docker))
	size := fmt.Sprintf("imported:%d (602.0KiB)", len(dockerTar))
	want := "importing " + docker + " (docker-archive, 602.0KiB) on 2 node(s)\n" +
		"n1: imported example.com/" + size + "\n" +
		"n2: imported example.com/" + size + "\n"
	if r.out != want {
		t.Errorf("import printed\n%s\nwant\n%s", r.out, want)
	}
	for _, n := range []*fakeNode{n1, n2} {
		if got := n.importedData(); len(got) != 1 || !bytes.Equal(got[0], dockerTar) {
			t.Errorf("%s got %d imports, want the tarball once", n.name, len(got))
		}
	}
	// An OCI layout, gzipped, to one node: it is sent decompressed.
	oci, ociTar := writeTar(t, dir, "app.oci.tar.gz", "oci-layout", "index.json", "blobs/sha256/x")
	r = mustOK(t, e.run("image", "import", oci, "--node", "n2"))
	if !strings.Contains(r.out, "(OCI layout,") || !strings.Contains(r.out, "n2: imported") || strings.Contains(r.out, "n1:") {
		t.Errorf("oci import printed %q", r.out)
	}
	if got := n2.importedData(); len(got) != 2 || !bytes.Equal(got[1], ociTar) {
		t.Errorf("n2 did not get the decompressed OCI tarball")
	}
	// A node without a tunnel fails; the others still import; exit 1.
	r = e.run("image", "import", docker, "--node", "n3,n1")
	mustFail(t, r, "error: node n3: ", "n3")
	if !strings.Contains(r.out, "n1: imported") {
		t.Errorf("n1 was not imported after n3 failed: %v", r)
	}
	bad, _ := writeTar(t, dir, "bad.tar", "hello.txt")
	mustFail(t, e.run("image", "import", bad), "neither an OCI image layout", "nor a docker-archive")
	notTar := writeFile(t, dir, "notes.txt", strings.Repeat("not a tar\n", 100))
	mustFail(t, e.run("image", "import", notTar), "not a tar archive")
	mustFail(t, e.run("image", "import", filepath.Join(dir, "missing.tar")), "no such file")

	r = mustOK(t, e.run("image", "ls"))
	got := fieldsOf(r.out)
	if strings.Join(got[0], " ") != "NODE IMAGE SIZE" || len(got) != 5 {
		t.Fatalf("image ls:\n%s", r.out)
	}
	if strings.Join(got[1], " ") != "n1 example.com/imported:616448 602.0KiB" || got[len(got)-1][0] != "n2" {
		t.Errorf("image ls rows:\n%s", r.out)
	}
	r = mustOK(t, e.run("image", "ls", "--node", "n2"))
	if len(fieldsOf(r.out)) != 3 || strings.Contains(r.out, "n1") {
		t.Errorf("image ls --node n2:\n%s", r.out)
	}
	mustFail(t, e.run("image", "ls", "--node", "n3"), "error: node n3:")
}

func TestImageNoReadyNodes(t *testing.T) {
	e := newEnv(t)
	readyNode(t, e, "n1", "False")
	dir := t.TempDir()
	p, _ := writeTar(t, dir, "a.tar", "manifest.json")
	mustFail(t, e.run("image", "import", p), "no Ready nodes (of 1): name one with --node")
}
