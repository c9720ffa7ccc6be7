package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// LogOptions says how ReadLog reads a container log.
type LogOptions struct {
	// TailLines, if > 0, starts at the last TailLines lines (counted across
	// the rotated files too) instead of the beginning.
	TailLines int
	// LimitBytes, if > 0, stops after that many bytes.
	LimitBytes int64
	// Follow keeps copying what is appended until ctx is cancelled or Done
	// is closed. A missing file is waited for.
	Follow bool
	// Done, with Follow, ends the follow gracefully: once it is closed
	// ReadLog copies what is left and returns nil. The caller closes it
	// when the container has exited.
	Done <-chan struct{}
	// PollInterval is how often a follower looks for new output
	// (default 100ms).
	PollInterval time.Duration
	// Format is the log file's format (the container's
	// ContainerStatus.LogFormat). A CRI log is decoded: what is written
	// is the container's text, partial entries joined into their lines.
	Format LogFormat
	// Timestamps prefixes each line with the time the runtime read it
	// (RFC3339Nano and a space), as `kubectl logs --timestamps` does.
	// Only a CRI log has times; ReadLog refuses it for a raw one
	// (ErrInvalid). TailLines counts the file's entries, so a line the
	// runtime split counts once per part.
	Timestamps bool
	// Since, if set, skips the lines the runtime read before it. As
	// Timestamps, only a CRI log has times (ErrInvalid for a raw one).
	Since time.Time
}

// ReadLog copies the container log at path to w: first the rotated files
// (path.N ... path.1, oldest first; see RotateLog), then path itself. With
// Follow it keeps copying what the runtime appends, and notices a rotation
// (a new path.1) by reading the rest of the old content from path.1. Without Follow, a log that does not exist yet is ErrNotFound.
// Cancelling ctx returns ctx.Err().
func ReadLog(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.Timestamps && opts.Format != LogFormatCRI {
		return fmt.Errorf("log %s: timestamps: the runtime wrote this log as raw output, with no time per line: %w", path, ErrInvalid)
	}
	if !opts.Since.IsZero() && opts.Format != LogFormatCRI {
		return fmt.Errorf("log %s: since: the runtime wrote this log as raw output, with no time per line: %w", path, ErrInvalid)
	}
	if opts.LimitBytes > 0 {
		w = &limitWriter{w: w, left: opts.LimitBytes}
	}
	var dec *criDecoder
	if opts.Format == LogFormatCRI {
		dec = &criDecoder{w: w, timestamps: opts.Timestamps, since: opts.Since}
		w = dec
	}
	err := readLog(ctx, path, opts, w)
	if dec != nil && err == nil {
		err = dec.Flush()
	}
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

func readLog(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	var (
		live    int64
		rotated fileID
		found   bool
	)
	err := withLogLock(path, unix.LOCK_SH, func() error {
		files := logFiles(path)
		if len(files) == 0 {
			return nil
		}
		found = true
		rotated = idOf(rotatedName(path, 1))
		first, offset := 0, int64(0)
		if opts.TailLines > 0 {
			var err error
			if first, offset, err = tailStart(files, opts.TailLines); err != nil {
				return err
			}
		}
		// The rotated files whole, then the live file up to its end.
		for i := first; i < len(files); i++ {
			start := int64(0)
			if i == first {
				start = offset
			}
			n, err := copyFrom(files[i], start, w)
			if err != nil {
				return err
			}
			if files[i] == path {
				live = start + n
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found && !opts.Follow {
		return fmt.Errorf("log %s: %w", path, ErrNotFound)
	}
	if !opts.Follow {
		return nil
	}
	return follow(ctx, path, live, rotated, opts, w)
}

// follow copies what is appended to path from offset on. rotated
// identifies path.1 as last seen: a new path.1 means a rotation happened
// (see RotateLog), and the unread rest of the old live file is in it.
func follow(ctx context.Context, path string, offset int64, rotated fileID, opts LogOptions, w io.Writer) error {
	t := time.NewTicker(opts.PollInterval)
	defer t.Stop()
	for {
		stopping := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-opts.Done:
			stopping = true
		case <-t.C:
		}
		err := withLogLock(path, unix.LOCK_SH, func() error {
			if id := idOf(rotatedName(path, 1)); id != rotated {
				rotated = id
				if _, err := copyFrom(rotatedName(path, 1), offset, w); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				offset = 0
			}
			if fi, err := os.Stat(path); err == nil && fi.Size() < offset {
				offset = 0 // truncated by someone else
			}
			n, err := copyFrom(path, offset, w)
			offset += n
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		if stopping {
			return nil
		}
	}
}

// fileID identifies a file across renames (device and inode).
type fileID struct{ dev, ino uint64 }

func idOf(path string) fileID {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}
	}
	return fileID{uint64(st.Dev), st.Ino}
}

// withLogLock runs fn holding an flock on the live log file (if it
// exists), so readers (shared) never see a rotation (exclusive) half done.
// The runtime, which only appends, takes no lock.
func withLogLock(path string, how int, fn func() error) error {
	f, err := os.Open(path)
	if err != nil {
		return fn()
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		return fmt.Errorf("lock log %s: %w", path, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}

// copyFrom copies path from offset to its current end.
func copyFrom(path string, offset int64, w io.Writer) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("log %s: %w", path, err)
	}
	n, err := io.Copy(w, f)
	if err != nil && !errors.Is(err, errLimitReached) {
		err = fmt.Errorf("log %s: %w", path, err)
	}
	return n, err
}

// logFiles lists the existing files of a log, oldest first.
func logFiles(path string) []string {
	var rotated []string
	for i := 1; ; i++ {
		name := rotatedName(path, i)
		if _, err := os.Stat(name); err != nil {
			break
		}
		rotated = append(rotated, name)
	}
	files := make([]string, 0, len(rotated)+1)
	for i := len(rotated) - 1; i >= 0; i-- {
		files = append(files, rotated[i])
	}
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	}
	return files
}

// tailStart finds where the last n lines of files begin: the index of the
// file and the offset in it.
func tailStart(files []string, n int) (int, int64, error) {
	for i := len(files) - 1; i >= 0; i-- {
		off, found, err := tailOffset(files[i], n)
		if err != nil {
			return 0, 0, err
		}
		if found >= n || i == 0 {
			return i, off, nil
		}
		n -= found
	}
	return 0, 0, nil
}

// tailOffset returns the offset of the last n lines of one file, and how
// many lines it found (fewer than n if the file is shorter; then offset 0).
// A final line without a newline counts as a line.
func tailOffset(path string, n int) (int64, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, 0, nil
	}
	buf := make([]byte, 32*1024)
	end := size
	if _, err := f.ReadAt(buf[:1], size-1); err != nil {
		return 0, 0, err
	}
	if buf[0] == '\n' {
		end-- // the last line's own newline is no separator
	}
	newlines := 0
	for pos := end; pos > 0; {
		chunk := int64(len(buf))
		if pos < chunk {
			chunk = pos
		}
		pos -= chunk
		if _, err := f.ReadAt(buf[:chunk], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := chunk - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				newlines++
				if newlines == n {
					return pos + i + 1, n, nil
				}
			}
		}
	}
	return 0, newlines + 1, nil
}

var errLimitReached = errors.New("log limit reached")

type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimitReached
	}
	short := false
	if int64(len(p)) > l.left {
		p, short = p[:l.left], true
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && short {
		err = errLimitReached
	}
	return n, err
}
