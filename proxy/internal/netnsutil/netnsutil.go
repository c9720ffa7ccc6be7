// Package netnsutil runs code inside a network namespace given by an open
// file descriptor, for the parts of the proxy that act on "the current
// namespace" (sockets, /proc/sys/net) while the proxy programs another one
// (tests and the all-in-one binary give it one).
//
// Contract: fn runs on a goroutine of its own, locked to an OS thread that
// has entered the namespace; the thread goes back to its original namespace
// afterwards, or, if that fails, dies with the goroutine (it stays locked),
// so no other goroutine ever runs in the wrong namespace.
package netnsutil

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs fn inside the network namespace fd. With fd 0 it runs fn where
// the caller is.
func Do(fd int, fn func() error) error {
	if fd == 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(netns.NsHandle(fd)); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace: %w", err)
			return
		}
		err = fn()
		if rerr := netns.Set(orig); rerr != nil {
			errc <- errors.Join(err, fmt.Errorf("leaving network namespace: %w", rerr))
			return // the thread stays locked and exits with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
