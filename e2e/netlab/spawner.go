package netlab

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	vnetns "github.com/vishvananda/netns"
)

// spawner forks every process of a lab from one OS thread that stays locked
// to its goroutine for the lab's whole life.
//
// Why one dedicated thread: a child's parent-death signal (Pdeathsig) fires
// when the *thread* that forked it exits, not the process. A thread that is
// unlocked after the fork returns to the Go scheduler's pool, and any other
// goroutine (a CNI or netns helper elsewhere in the test binary that locks
// a thread and returns without unlocking, on purpose, to discard a thread
// in a foreign namespace) could later end it and so SIGKILL our kubelets at
// a random moment. A thread that stays locked to the spawner's goroutine
// runs nothing else and ends only when the lab closes (after its processes
// were killed) or the test process dies.
type spawner struct {
	reqs chan spawnReq
	done chan struct{} // closed when the spawner goroutine has returned
	err  error         // why it returned early; set before done is closed
}

type spawnReq struct {
	ns     vnetns.NsHandle
	cmd    *exec.Cmd
	result chan error
}

var errSpawnerGone = errors.New("netlab: process spawner has stopped")

func newSpawner() (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go s.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return s, nil
}

func (s *spawner) run(ready chan<- error) {
	defer close(s.done)
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	orig, err := vnetns.Get()
	if err != nil {
		ready <- fmt.Errorf("netlab: spawner: get netns: %w", err)
		return
	}
	defer orig.Close()
	ready <- nil
	for req := range s.reqs {
		if !req.ns.IsOpen() { // the test process's own namespace
			req.result <- req.cmd.Start()
			continue
		}
		if err := vnetns.Set(req.ns); err != nil {
			req.result <- fmt.Errorf("setns: %w", err)
			continue
		}
		serr := req.cmd.Start()
		if err := vnetns.Set(orig); err != nil {
			// The thread is stuck in the host's namespace: stop using it.
			// Returning ends the thread, which SIGKILLs what it forked
			// (Pdeathsig), this last process included.
			s.err = fmt.Errorf("netlab: spawner: return to original netns: %w", err)
			req.result <- errors.Join(serr, s.err)
			return
		}
		req.result <- serr
	}
}

// start runs cmd.Start on the spawner's thread inside the namespace ns
// (vnetns.None(): the test process's own).
func (s *spawner) start(ns vnetns.NsHandle, cmd *exec.Cmd) error {
	req := spawnReq{ns: ns, cmd: cmd, result: make(chan error, 1)}
	select {
	case s.reqs <- req:
		return <-req.result
	case <-s.done:
		return errors.Join(errSpawnerGone, s.err)
	}
}

// stop ends the spawner and its thread. No start may follow.
func (s *spawner) stop() {
	select {
	case <-s.done:
	default:
		close(s.reqs)
		<-s.done
	}
}
