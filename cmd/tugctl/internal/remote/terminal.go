package remote

import (
	"context"
	"os"
	"os/signal"

	"golang.org/x/term"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// rawMode puts the terminal fd in raw mode (no echo, no line editing, no
// signals from ^C: keys go to the remote command as typed) and returns the
// function that restores it.
func rawMode(fd int) (restore func(), err error) {
	st, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	return func() { _ = term.Restore(fd, st) }, nil
}

// terminalSize is the size of the terminal fd, nil if it cannot be read.
func terminalSize(fd int) *v1.TerminalSize {
	w, h, err := term.GetSize(fd)
	if err != nil || w <= 0 || h <= 0 {
		return nil
	}
	return &v1.TerminalSize{Width: uint32(w), Height: uint32(h)}
}

// watchSize calls send with the terminal's size now and whenever it
// changes (SIGWINCH), until ctx ends.
func watchSize(ctx context.Context, fd int, send func(*v1.TerminalSize) error) {
	ch := make(chan os.Signal, 1)
	notifyResize(ch)
	defer signal.Stop(ch)
	var last *v1.TerminalSize
	for {
		if sz := terminalSize(fd); sz != nil && (last == nil || sz.Width != last.Width || sz.Height != last.Height) {
			if send(sz) != nil {
				return
			}
			last = sz
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
