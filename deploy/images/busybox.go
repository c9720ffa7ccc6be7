package images

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
)

// DefaultBusyboxPath is where Debian's busybox-static puts its binary.
const DefaultBusyboxPath = "/bin/busybox"

// basePath is the PATH of Tugboat's images.
const basePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Busybox returns the busybox image: the static binary at busyboxPath
// (DefaultBusyboxPath if empty) as /bin/busybox, a symlink for each applet
// it lists (sh, httpd, sleep, wget, nc, ...), /etc/passwd and /etc/group,
// /tmp and /var/www. It runs sh by default.
func Busybox(ctx context.Context, busyboxPath string) (*Image, error) {
	if busyboxPath == "" {
		busyboxPath = DefaultBusyboxPath
	}
	if err := checkStatic(busyboxPath); err != nil {
		return nil, fmt.Errorf("busybox image: %w (install Debian's busybox-static: hack/install-deps.sh)", err)
	}
	out, err := exec.CommandContext(ctx, busyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox image: %s --list-full: %w", busyboxPath, err)
	}
	files := append(baseFiles(),
		File{Path: "bin/busybox", Mode: 0o755, Source: busyboxPath},
		File{Path: "var/www", Mode: fs.ModeDir | 0o755},
	)
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" {
			continue
		}
		files = append(files, File{Path: applet, Mode: fs.ModeSymlink | 0o777, Link: "/bin/busybox"})
	}
	return &Image{
		Ref:   BusyboxRef,
		Files: files,
		Config: Config{
			Cmd: []string{"sh"},
			Env: []string{basePath},
		},
	}, nil
}

// baseFiles are in every image: users, groups, a sticky /tmp.
func baseFiles() []File {
	return []File{
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "root", Mode: fs.ModeDir | 0o700},
	}
}

// checkStatic fails for a binary that needs a dynamic loader, which a
// FROM-scratch image does not have.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := bytes.CutSuffix(readAll(p), []byte{0})
			return fmt.Errorf("%s is dynamically linked (interpreter %s)", path, interp)
		}
	}
	return nil
}

func readAll(p *elf.Prog) []byte {
	b := make([]byte, p.Filesz)
	_, _ = p.ReadAt(b, 0)
	return b
}
