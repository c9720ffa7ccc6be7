package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The Go packages of the images built from this module's own programs.
const (
	EchoPackage  = "github.com/tugboat/tugboat/deploy/examples/echo"
	PausePackage = "github.com/tugboat/tugboat/deploy/pause"
)

// BuildGo compiles the Go package pkg, static (CGO_ENABLED=0), to out, with
// the go tool run in moduleDir (a directory inside the Tugboat module; the
// current directory if empty).
func BuildGo(ctx context.Context, pkg, out, moduleDir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return checkStatic(out)
}

// BuildEcho compiles the echo server (BuildGo of EchoPackage).
func BuildEcho(ctx context.Context, out, moduleDir string) error {
	return BuildGo(ctx, EchoPackage, out, moduleDir)
}

// Echo returns the echo server image around a static binary: /echo is the
// entrypoint, listening on port 80 (env PORT changes it).
func Echo(binary string) (*Image, error) {
	data, err := readStatic(binary)
	if err != nil {
		return nil, fmt.Errorf("echo image: %w", err)
	}
	return &Image{
		Ref:   EchoRef,
		Files: append(baseFiles(), File{Path: "echo", Mode: 0o755, Data: data}),
		Config: Config{
			Entrypoint:   []string{"/echo"},
			Env:          []string{basePath},
			ExposedPorts: []string{"80/tcp"},
			StopSignal:   "SIGTERM",
		},
	}, nil
}

// Pause returns the sandbox image around the static pause binary
// (deploy/pause): /pause alone, run as root, as Kubernetes' pause image.
// GOMAXPROCS=1 keeps each pod's pause process to the fewest threads.
func Pause(binary string) (*Image, error) {
	data, err := readStatic(binary)
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	return &Image{
		Ref:   PauseRef,
		Files: []File{{Path: "pause", Mode: 0o755, Data: data}},
		Config: Config{
			Entrypoint: []string{"/pause"},
			Env:        []string{"GOMAXPROCS=1", "GOGC=off"},
		},
	}, nil
}

// readStatic reads a static binary (now: it may be a temp file).
func readStatic(binary string) ([]byte, error) {
	if err := checkStatic(binary); err != nil {
		return nil, err
	}
	return os.ReadFile(binary)
}

// goImage builds the image of a Go program of this module: the prebuilt
// binary if given, else one compiled into opts.WorkDir (or a temp dir).
func goImage(ctx context.Context, pkg, prebuilt string, opts BuildOptions, image func(string) (*Image, error)) (*Image, error) {
	binary := prebuilt
	if binary == "" {
		dir := opts.WorkDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "tugboat-image")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		binary = filepath.Join(dir, filepath.Base(pkg))
		if err := BuildGo(ctx, pkg, binary, opts.ModuleDir); err != nil {
			return nil, err
		}
	}
	return image(binary)
}
