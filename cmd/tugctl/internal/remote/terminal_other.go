//go:build !unix

package remote

import "os"

// notifyResize does nothing where there is no SIGWINCH: the size is sent
// once, at the start.
func notifyResize(chan<- os.Signal) {}
