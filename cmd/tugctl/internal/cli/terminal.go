package cli

import (
	"io"

	"golang.org/x/term"
)

// fdFile is what *os.File offers to find out whether it is a terminal.
type fdFile interface{ Fd() uintptr }

// TerminalFd returns the file descriptor of s when it is a terminal.
func TerminalFd(s any) (int, bool) {
	f, ok := s.(fdFile)
	if !ok {
		return -1, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// IsTerminal reports whether w (an output stream) is a terminal.
func IsTerminal(w io.Writer) bool {
	_, ok := TerminalFd(w)
	return ok
}
