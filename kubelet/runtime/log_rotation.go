package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/internal/atomicfile"
)

// Log rotation defaults, as the kubelet's containerLogMaxSize and
// containerLogMaxFiles.
const (
	DefaultLogMaxBytes = 10 << 20
	DefaultLogMaxFiles = 5
)

func rotatedName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// RotateLog rotates the log at path if it has grown past maxBytes: older
// rotations shift (path.1 -> path.2 ...), the oldest beyond maxFiles-1 is
// removed, the live file is copied to path.1 and truncated. maxFiles counts
// the live file (minimum 2). It reports whether it rotated.
//
// The runtime keeps the live file open in append mode, so rotation must
// copy and truncate rather than rename; output written between the copy and
// the truncation (microseconds) is lost. Rotation holds an exclusive flock
// on the live file, ReadLog a shared one, so a reader never sees a rotation
// half done.
func RotateLog(path string, maxBytes int64, maxFiles int) (bool, error) {
	if maxFiles < 2 {
		maxFiles = 2
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("rotate log: %w", err)
	}
	if fi.Size() <= maxBytes {
		return false, nil
	}
	err = withLogLock(path, unix.LOCK_EX, func() error { return rotate(path, maxFiles) })
	return err == nil, err
}

func rotate(path string, maxFiles int) error {
	if err := os.Remove(rotatedName(path, maxFiles-1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate log: %w", err)
	}
	for i := maxFiles - 2; i >= 1; i-- {
		if err := os.Rename(rotatedName(path, i), rotatedName(path, i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	if err := atomicfile.Copy(rotatedName(path, 1), path, 0o640); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	return nil
}

// ContainerLister is the part of a Runtime that LogRotator needs.
type ContainerLister interface {
	ListContainers(ctx context.Context, filter ContainerFilter) ([]ContainerStatus, error)
}

// LogRotator rotates the logs of running containers by size.
type LogRotator struct {
	Containers ContainerLister
	// MaxBytes is the size past which a log is rotated (DefaultLogMaxBytes).
	MaxBytes int64
	// MaxFiles counts the files kept per log, live one included
	// (DefaultLogMaxFiles).
	MaxFiles int
	// Interval between checks (default 10s).
	Interval time.Duration
	Logger   *slog.Logger
}

// Run checks the logs every Interval until ctx is cancelled. Errors are
// logged, never fatal; it returns nil when ctx ends.
func (r *LogRotator) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := r.RotateOnce(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("log rotation", "err", err)
		}
	}
}

// RotateOnce rotates every running container's log that is too big.
func (r *LogRotator) RotateOnce(ctx context.Context) error {
	maxBytes, maxFiles := r.MaxBytes, r.MaxFiles
	if maxBytes <= 0 {
		maxBytes = DefaultLogMaxBytes
	}
	if maxFiles <= 0 {
		maxFiles = DefaultLogMaxFiles
	}
	cs, err := r.Containers.ListContainers(ctx, ContainerFilter{State: ContainerRunning})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if c.LogPath == "" {
			continue
		}
		rotated, err := RotateLog(c.LogPath, maxBytes, maxFiles)
		if err != nil {
			errs = append(errs, fmt.Errorf("container %s (%s/%s): %w", c.ID, c.Pod, c.Name, err))
			continue
		}
		if rotated {
			r.logger().Debug("rotated container log", "container", c.ID, "path", c.LogPath)
		}
	}
	return errors.Join(errs...)
}

func (r *LogRotator) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}
