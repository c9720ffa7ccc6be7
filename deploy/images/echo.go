package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EchoPackage is the Go package of the echo server.
const EchoPackage = "github.com/tugboat/tugboat/deploy/examples/echo"

// BuildEcho compiles the echo server, static (CGO_ENABLED=0), to out, with
// the go tool run in moduleDir (a directory inside the Tugboat module; the
// current directory if empty).
func BuildEcho(ctx context.Context, out, moduleDir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, EchoPackage)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build echo server: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return checkStatic(out)
}

// Echo returns the echo server image around a static binary: /echo is the
// entrypoint, listening on port 80 (env PORT changes it).
func Echo(binary string) (*Image, error) {
	if err := checkStatic(binary); err != nil {
		return nil, fmt.Errorf("echo image: %w", err)
	}
	data, err := os.ReadFile(binary) // read now: binary may be a temp file
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

func echoImage(ctx context.Context, opts BuildOptions) (*Image, error) {
	binary := opts.EchoBinary
	if binary == "" {
		dir := opts.WorkDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "tugboat-echo")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		binary = filepath.Join(dir, "echo")
		if err := BuildEcho(ctx, binary, opts.ModuleDir); err != nil {
			return nil, err
		}
	}
	return Echo(binary)
}
