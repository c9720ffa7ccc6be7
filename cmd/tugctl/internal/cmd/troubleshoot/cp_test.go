package troubleshoot

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCpArg(t *testing.T) {
	tests := []struct {
		arg, ns, pod, path, err string
		local                   bool
	}{
		{arg: "web:/etc/hosts", pod: "web", path: "/etc/hosts"},
		{arg: "prod/web:/tmp", ns: "prod", pod: "web", path: "/tmp"},
		{arg: "./a:b", local: true},
		{arg: "/abs/x:y", local: true},
		{arg: "plain.txt", local: true},
		{arg: "web:", err: "filepath can not be empty"},
		{arg: "/web:x", local: true},
	}
	for _, tc := range tests {
		rf, err := parseCpArg(tc.arg)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.arg, err, tc.err)
			}
		case tc.local:
			if rf != nil || err != nil {
				t.Errorf("%s: %+v %v, want local", tc.arg, rf, err)
			}
		case err != nil || rf == nil || rf.namespace != tc.ns || rf.pod != tc.pod || rf.path != tc.path:
			t.Errorf("%s: %+v %v", tc.arg, rf, err)
		}
	}
}

// TestUntarSkipsEscapes: entries outside the destination and symlinks
// are skipped with kubectl's warnings; the rest lands under dest.
func TestUntarSkipsEscapes(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, data string) {
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	add(&tar.Header{Name: "tmp/d/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "tmp/d/ok.txt", Typeflag: tar.TypeReg, Mode: 0o600}, "ok")
	add(&tar.Header{Name: "tmp/d/../../../escape.txt", Typeflag: tar.TypeReg, Mode: 0o644}, "bad")
	add(&tar.Header{Name: "tmp/d/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, "")
	tw.Close()
	root := t.TempDir()
	dest := filepath.Join(root, "out")
	var warn bytes.Buffer
	if err := untar(&buf, dest, tarPrefix("/tmp/d"), &warn); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "ok.txt")); err != nil || string(b) != "ok" {
		t.Errorf("ok.txt: %q %v", b, err)
	}
	if st, _ := os.Stat(filepath.Join(dest, "ok.txt")); st == nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ok.txt mode: %v", st)
	}
	for _, p := range []string{filepath.Join(root, "escape.txt"), filepath.Join(dest, "link")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if w := warn.String(); !strings.Contains(w, `warning: file "tmp/d/../../../escape.txt" is outside target destination, skipping`) || !strings.Contains(w, `warning: skipping symlink`) {
		t.Errorf("warnings: %q", w)
	}
}
