package pod

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestParseEnvFile(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "A=1\nB=two words\n", want: "map[A:1 B:two words]"},
		{in: "# comment\n\n  A = 1  \n\tB=\n", want: "map[A:1 B:]"},
		{in: `A="quoted # not a comment"` + "\nB='single'\nC=\"unbalanced\nD=a=b\n", want: `map[A:quoted # not a comment B:single C:"unbalanced D:a=b]`},
		{in: "A=1\nA=2\n", want: "map[A:2]"},
		{in: "A=1\nnot a pair\n", err: "line 2: want KEY=VALUE"},
		{in: "=x\n", err: "line 1: want KEY=VALUE"},
	} {
		got, err := parseEnvFile([]byte(c.in))
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.in, err)
		case fmt.Sprint(got) != c.want:
			t.Errorf("%q: %v, want %s", c.in, got, c.want)
		}
	}
}

// TestReadEnvFile: symlinks resolve inside the volume (a link to /etc
// stays in it), a missing file is errEnvFileMissing, a directory and an
// oversized file are refused.
func TestReadEnvFile(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "conf/app.env", "K=inside\n")
	write(root, "etc/host.env", "K=volume's own etc\n")
	write(outside, "host.env", "K=the node's file\n")
	for name, target := range map[string]string{"rel": "conf/app.env", "abs": "/etc/host.env", "escape": "../../../../../../" + outside + "/host.env"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "big.env"), make([]byte, maxEnvFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want, err string }{
		{path: "conf/app.env", want: "inside"},
		{path: "rel", want: "inside"},
		{path: "abs", want: "volume's own etc"},
		{path: "escape", err: "no such file"},
		{path: "missing.env", err: "no such file"},
		{path: "conf", err: "not a regular file"},
		{path: "big.env", err: "larger than"},
	} {
		vars, err := readEnvFile(root, c.path)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, %v; want error %q", c.path, vars, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.path, err)
		case vars["K"] != c.want:
			t.Errorf("%s: K=%q, want %q", c.path, vars["K"], c.want)
		}
	}
}

// TestFileKeyRefEnv: the app container waits with
// CreateContainerConfigError while the env file (or its key) is missing,
// and starts with the value once the file is in the emptyDir; an optional
// missing key leaves its variable unset.
func TestFileKeyRefEnv(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("envfile", "app")
	pod.Spec.Volumes = []*v1.Volume{{Name: "config", EmptyDir: &v1.EmptyDirVolumeSource{}}}
	pod.Spec.Containers[0].Env = []*v1.EnvVar{
		{Name: "DB_HOST", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "config", Path: "app.env", Key: "DB_HOST"}}},
		{Name: "EXTRA", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "config", Path: "app.env", Key: "EXTRA", Optional: true}}},
		{Name: "URL", Value: "postgres://$(DB_HOST)/"},
	}
	w := e.worker(pod)
	e.sync(w)
	wt := containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonCreateContainerConfigError || wt.GetMessage() != `env DB_HOST: fileKeyRef: env file "app.env" in volume "config": no such file` {
		t.Fatalf("waiting %v, want CreateContainerConfigError for the missing file", wt)
	}
	dir := e.m.cfg.EmptyDirPath(w.uid, "config")
	if err := os.WriteFile(filepath.Join(dir, "app.env"), []byte("# written by an init container\nDB_HOST=db.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.advance(configRetry)
	e.sync(w)
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	got := map[string]string{}
	for _, ev := range e.rt.containers[run[0].ID].cfg.Env {
		got[ev.Name] = ev.Value
	}
	if got["DB_HOST"] != "db.internal" || got["URL"] != "postgres://db.internal/" {
		t.Errorf("env %v", got)
	}
	if _, ok := got["EXTRA"]; ok {
		t.Errorf("optional missing key EXTRA is set: %v", got)
	}
}
