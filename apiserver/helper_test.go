package apiserver_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// helperEnv names the helper a re-executed test binary runs instead of the
// tests (see TestMain); the helper reads the rest of its input from the
// environment.
const helperEnv = "TUGBOAT_APISERVER_TEST_HELPER"

// helpers are what a test runs in a process of its own: under another
// user, or with other resource limits.
var helpers = map[string]func() int{}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		h, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(h())
	}
	os.Exit(m.Run())
}

// helperCommand runs helper name in a copy of this test binary; the copy
// lives in an open folder (0755), so another user may run it.
func helperCommand(t *testing.T, name string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := openTempDir(t)
	bin := filepath.Join(dir, "helper.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + name}, env...)...)
	return cmd
}

// openTempDir is a t.TempDir() that every user may enter (0755, its
// parent too).
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// requireRoot skips t unless it runs as root (fails it under CI=true).
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root (%s); CI=true, so this is a failure and not a skip", why)
	}
	t.Skipf("needs root (%s)", why)
}
