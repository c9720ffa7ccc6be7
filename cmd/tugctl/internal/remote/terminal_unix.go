//go:build unix

package remote

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize delivers SIGWINCH, the terminal's size change, to ch.
func notifyResize(ch chan<- os.Signal) { signal.Notify(ch, syscall.SIGWINCH) }
