package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/tugboat/tugboat/deploy/images"
)

// Binaries are the real binaries and image archives a cluster runs, built
// once per test binary (BuildBinaries in TestMain) into a directory.
type Binaries struct {
	Dir string
	// APIServer and Kubelet are required; Scheduler and ControllerManager
	// are empty when cmd/ has no such command or it does not build yet (the
	// harness then runs without them and tests bind pods directly).
	APIServer         string
	Kubelet           string
	Scheduler         string
	ControllerManager string
	// Skipped says why optional binaries are missing.
	Skipped map[string]string

	moduleDir string
	mu        sync.Mutex
	images    map[string]string // image name -> archive path
}

// ModuleDir finds the Tugboat module's root from the working directory.
func ModuleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/tugboat/tugboat\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cluster: not inside the tugboat module (no go.mod found above the working directory)")
		}
		dir = parent
	}
}

// BuildBinaries builds cmd/apiserver and cmd/kubelet (and cmd/scheduler
// and cmd/controller-manager if they exist and build) into dir.
func BuildBinaries(ctx context.Context, dir string) (*Binaries, error) {
	mod, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b := &Binaries{Dir: dir, Skipped: map[string]string{}, moduleDir: mod, images: map[string]string{}}
	if err := goBuild(ctx, mod, dir, "./cmd/apiserver", "./cmd/kubelet"); err != nil {
		return nil, err
	}
	b.APIServer, b.Kubelet = filepath.Join(dir, "apiserver"), filepath.Join(dir, "kubelet")
	for _, opt := range []struct {
		name string
		dst  *string
	}{{"scheduler", &b.Scheduler}, {"controller-manager", &b.ControllerManager}} {
		if _, err := os.Stat(filepath.Join(mod, "cmd", opt.name, "main.go")); err != nil {
			b.Skipped[opt.name] = "cmd/" + opt.name + " does not exist"
			continue
		}
		if err := goBuild(ctx, mod, dir, "./cmd/"+opt.name); err != nil {
			b.Skipped[opt.name] = err.Error()
			continue
		}
		*opt.dst = filepath.Join(dir, opt.name)
	}
	return b, nil
}

func goBuild(ctx context.Context, mod, out string, pkgs ...string) error {
	args := append([]string{"build", "-o", out + "/"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", pkgs, err, out)
	}
	return nil
}

// LoadBinaries uses binaries BuildBinaries already put in dir.
func LoadBinaries(dir string) (*Binaries, error) {
	mod, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	b := &Binaries{Dir: dir, Skipped: map[string]string{}, moduleDir: mod, images: map[string]string{}}
	for name, dst := range map[string]*string{"apiserver": &b.APIServer, "kubelet": &b.Kubelet, "scheduler": &b.Scheduler, "controller-manager": &b.ControllerManager} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			*dst = p
		} else {
			b.Skipped[name] = "not built"
		}
	}
	if b.APIServer == "" || b.Kubelet == "" {
		return nil, fmt.Errorf("cluster: no apiserver and kubelet binaries in %s", dir)
	}
	return b, nil
}

// Image returns the path of the archive of a test image ("busybox" or
// "echo", see e2e/images), building it on first use.
func (b *Binaries) Image(ctx context.Context, name string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.images[name]; ok {
		return p, nil
	}
	var buf bytes.Buffer
	if err := images.Build(ctx, name, &buf, images.BuildOptions{ModuleDir: b.moduleDir}); err != nil {
		return "", err
	}
	p := filepath.Join(b.Dir, name+".tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	b.images[name] = p
	return p, nil
}
