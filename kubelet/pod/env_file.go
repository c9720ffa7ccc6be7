package pod

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// env[].valueFrom.fileKeyRef (Kubernetes 1.34 EnvFiles): the value of a
// key of an env file in one of the pod's emptyDir volumes, read on the
// node when the container is created (so an init container can write
// it). The file is opened inside the volume's directory, its symlinks
// resolved as in the container (openat2 RESOLVE_IN_ROOT: a link to /etc
// points into the volume, never at the node's /etc).
//
// The file holds KEY=VALUE lines (the dotenv format): blank lines and
// lines starting with # are skipped, whitespace around a line is ignored,
// the value runs to the end of the line, and a value wholly in single or
// double quotes loses them (no escapes are interpreted); a later line of
// the same key wins. A line without '=' makes the file invalid. At most
// maxEnvFileSize bytes are read.
//
// A missing file or key is an error that keeps the container waiting
// (CreateContainerConfigError, retried), unless the selector is
// optional: then the variable is left unset.

// maxEnvFileSize bounds what the kubelet reads of an env file.
const maxEnvFileSize = 1 << 20

// errEnvFileMissing: the env file does not exist.
var errEnvFileMissing = errors.New("no such file")

// fileKeyValue resolves a fileKeyRef; ok is false for an optional file or
// key that is missing. dir is the volume's directory on the node.
func fileKeyValue(e *v1.EnvVar, ref *v1.FileKeySelector, dir string) (string, bool, error) {
	if dir == "" {
		return "", false, configErrorf("env %s: fileKeyRef: volume %q is not an emptyDir volume of the pod", e.Name, ref.VolumeName)
	}
	vars, err := readEnvFile(dir, ref.Path)
	switch {
	case errors.Is(err, errEnvFileMissing) && ref.Optional:
		return "", false, nil
	case err != nil:
		return "", false, configErrorf("env %s: fileKeyRef: env file %q in volume %q: %v", e.Name, ref.Path, ref.VolumeName, err)
	}
	v, ok := vars[ref.Key]
	if !ok {
		if ref.Optional {
			return "", false, nil
		}
		return "", false, configErrorf("env %s: fileKeyRef: env file %q in volume %q has no key %q", e.Name, ref.Path, ref.VolumeName, ref.Key)
	}
	return v, true, nil
}

// readEnvFile reads and parses the env file at rel inside root.
func readEnvFile(root, rel string) (map[string]string, error) {
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errEnvFileMissing
		}
		return nil, err
	}
	defer unix.Close(rootFD)
	fd, err := unix.Openat2(rootFD, filepath.Clean(rel), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errEnvFileMissing
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type()&fs.ModeType)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEnvFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxEnvFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxEnvFileSize)
	}
	return parseEnvFile(b)
}

// parseEnvFile parses KEY=VALUE lines (see above).
func parseEnvFile(b []byte) (map[string]string, error) {
	out := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 0, 64<<10), maxEnvFileSize)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, s.Err()
}
