package runtime

import "io"

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width  uint16
	Height uint16
}

// ExecRequest is a command to run in a running container.
type ExecRequest struct {
	Cmd []string
	// Stdin, if set, is copied to the process; the process sees EOF when
	// it returns EOF.
	Stdin io.Reader
	// Stdout and Stderr, if set, receive the output. With TTY, the
	// terminal's output goes to Stdout and Stderr is unused.
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	// Resize, if set with TTY, delivers terminal size changes.
	Resize <-chan TerminalSize
}
