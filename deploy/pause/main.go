// Command pause is the process of every pod sandbox's infrastructure
// container on the CRI path (the runtime's sandbox_image): it holds the
// pod's namespaces open and does nothing else, like Kubernetes' pause.
//
// It sleeps until SIGTERM or SIGINT (then exits 0) and reaps the zombies
// it inherits as PID 1 of a shared pod PID namespace. The runtime stops it
// with SIGKILL on StopPodSandbox; a pause that exits on its own marks the
// sandbox NotReady and the kubelet makes a new one.
//
// Built static (CGO_ENABLED=0) into the tugboat.local/pause image by
// hack/mkimage; no registry is needed.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is what -v prints.
const version = "tugboat-pause 1.0"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println(version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not the first process of its PID namespace")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: %v: exiting\n", s)
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
