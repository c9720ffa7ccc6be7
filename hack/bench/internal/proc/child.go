package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Child is a process a benchmark driver started, its output in a log file;
// it is killed if the driver dies (Pdeathsig).
type Child struct {
	Name string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// Start runs bin with args, env added to the driver's environment, its
// stdout and stderr in logPath.
func Start(name, bin, logPath string, env []string, args ...string) (*Child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &Child{Name: name, cmd: cmd, log: f, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

// Stop sends SIGTERM and waits, killing the process after grace.
func (c *Child) Stop(grace time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.log.Close()
}

// Exited reports an early exit, naming the log to read.
func (c *Child) Exited() error {
	select {
	case err := <-c.done:
		c.done <- err
		return fmt.Errorf("%s exited: %v (see %s)", c.Name, err, c.log.Name())
	default:
		return nil
	}
}

// Pid is the process's ID.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// CPUSeconds is the process's user+system CPU time so far.
func (c *Child) CPUSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid()))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}
