package apiserver

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedEtcdSocketAndLog: the embedded etcd listens on a 0600 socket
// in a data dir made 0700 (it was 0755), answers there, and its warnings
// and errors reach the apiserver's log.
func TestEmbeddedEtcdSocketAndLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, url, err := startEmbeddedEtcd(ctx, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sock := filepath.Join(dir, EtcdSocket)
	if url != "unix://"+sock {
		t.Fatalf("client URL %s, want unix://%s", url, sock)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, sock: 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), want)
		}
	}
	cli, err := dialEtcd(ctx, []string{url}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	// etcd's own warnings reach the log (a compaction to a future
	// revision is one), its info lines do not.
	if _, err := cli.Compact(ctx, 1<<40); err == nil {
		t.Fatal("compaction to a future revision succeeded")
	}
	e.Server.Logger().Info("test info from etcd")
	b, _ := os.ReadFile(logFile.Name())
	out := string(b)
	if !strings.Contains(out, `level=WARN msg="failed to apply request" error="mvcc: required revision is a future revision"`) {
		t.Errorf("etcd's warning is not in the log:\n%s", out)
	}
	if strings.Contains(out, "test info from etcd") || strings.Contains(out, "request stats") {
		t.Errorf("etcd's info lines reach the log:\n%s", out)
	}
	t.Logf("log:\n%s", out)
}
