package main

import (
	"path/filepath"
	"time"

	procfs "github.com/tugboat/tugboat/hack/bench/internal/proc"
)

// proc is a child process, its output in logDir/<name>.log.
type proc = procfs.Child

func start(name, bin, logDir string, args ...string) (*proc, error) {
	return procfs.Start(name, bin, filepath.Join(logDir, name+".log"), nil, args...)
}

// stopGrace is how long a component gets to stop before it is killed.
const stopGrace = 20 * time.Second

// cpuSeconds is p's CPU time so far (0 if it cannot be read).
func cpuSeconds(p *proc) float64 {
	s, _ := p.CPUSeconds()
	return s
}

func peak(p *proc) int64 {
	_, peak, _ := procfs.Memory(p.Pid())
	return peak
}
