package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func require(t *testing.T) {
	t.Helper()
	err := Check()
	if err == nil && os.Geteuid() != 0 {
		err = os.ErrPermission
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root and containerd: %v", err)
	}
	t.Skipf("needs root and containerd: %v", err)
}

// TestStartStopInALongDir: a dir too long for a socket path gets its
// socket in a folder under /run that Stop removes; containerd answers
// there, and no longer after Stop.
func TestStartStopInALongDir(t *testing.T) {
	require(t)
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	d, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = UnmountUnder(dir) }()
	if !strings.HasPrefix(d.Address, "/run/tugboat-containerd-") || d.Address != Address(dir) {
		t.Errorf("Address %s: want a folder under /run, the same as Address(dir)", d.Address)
	}
	if err := Ping(context.Background(), d.Address); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	if err := Ping(context.Background(), d.Address); err == nil {
		t.Fatal("containerd still answers after Stop")
	}
	if _, err := os.Stat(filepath.Dir(d.Address)); !os.IsNotExist(err) {
		t.Errorf("socket folder %s left after Stop (%v)", filepath.Dir(d.Address), err)
	}
	d.Stop() // twice is fine
}
