package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/internal/syncbuf"
)

// killWait bounds how long Stop and Kill wait for a killed process to be
// reaped.
const killWait = 10 * time.Second

// Proc is a process started in a host with Host.Start. The lab reaps it:
// callers wait with Wait or Done, never with Cmd.Wait.
type Proc struct {
	// Cmd is the command as started; Cmd.Process is set.
	Cmd *exec.Cmd

	host    *Host
	logPath string
	done    chan struct{}
	err     error // Cmd.Wait's result, set before done is closed
}

// Start starts cmd inside the host's network namespace and returns at once.
// The process keeps the root mount namespace (it shares the file system and
// sockets such as containerd's with every other process), leads a process
// group of its own, and gets SIGKILL if the test process dies. When ctx is
// done the process and its group are killed, as with exec.CommandContext.
//
// When cmd.Stdout and cmd.Stderr are both nil and Config.LogDir is set, the
// output goes to a new file in LogDir (see Proc.LogPath).
func (h *Host) Start(ctx context.Context, cmd *exec.Cmd) (*Proc, error) {
	return h.start(ctx, cmd, true)
}

func (h *Host) start(ctx context.Context, cmd *exec.Cmd, logToFile bool) (*Proc, error) {
	if cmd.Process != nil {
		return nil, fmt.Errorf("netlab: %s: %s: already started", h.Name, cmd.Path)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("netlab: %s: %w", h.Name, err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid { // a session leader leads its group already
		cmd.SysProcAttr.Setpgid = true
		cmd.SysProcAttr.Pgid = 0
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("netlab: %s: %w", h.Name, errClosed)
	}
	h.seq++
	p := &Proc{Cmd: cmd, host: h, done: make(chan struct{})}

	var logFile *os.File
	if logToFile && cmd.Stdout == nil && cmd.Stderr == nil && h.lab.cfg.LogDir != "" {
		p.logPath = filepath.Join(h.lab.cfg.LogDir, fmt.Sprintf("%s-%d-%s.log", h.Name, h.seq, filepath.Base(cmd.Path)))
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("netlab: %s: log file: %w", h.Name, err)
		}
		logFile = f
		cmd.Stdout, cmd.Stderr = f, f
	}

	if err := h.lab.spawn.start(h.ns, cmd); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		if cmd.Process != nil { // started, but the spawner broke (and killed it)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("netlab: %s: start %s: %w", h.Name, cmd.Path, err)
	}
	h.procs = append(h.procs, p)
	log := h.log.With("pid", cmd.Process.Pid, "cmd", commandLine(cmd))
	log.Info("process started", "log", p.logPath)

	stopKill := context.AfterFunc(ctx, func() { p.killGroup() })
	go func() {
		err := cmd.Wait()
		stopKill()
		if logFile != nil {
			logFile.Close()
		}
		p.err = err
		log.Info("process exited", "err", err) // before done: tests stop logging once it is closed
		close(p.done)
	}()
	return p, nil
}

// Run starts cmd in the host like Start and waits for it to exit. When
// cmd.Stdout and cmd.Stderr are both nil, the combined output is part of the
// returned error if the command fails.
func (h *Host) Run(ctx context.Context, cmd *exec.Cmd) error {
	var out *syncbuf.Buffer
	if cmd.Stdout == nil && cmd.Stderr == nil {
		out = &syncbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
	}
	p, err := h.start(ctx, cmd, false)
	if err != nil {
		return err
	}
	<-p.done
	if p.err == nil {
		return nil
	}
	err = p.err
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed: %w)", p.err, ctx.Err())
	}
	if out != nil {
		return fmt.Errorf("netlab: %s: %s: %w; output: %s", h.Name, commandLine(cmd), err, strings.TrimSpace(out.String()))
	}
	return fmt.Errorf("netlab: %s: %s: %w", h.Name, commandLine(cmd), err)
}

// Output runs cmd in the host like Run and returns its standard output.
// When cmd.Stderr is nil, the standard error is part of the returned error
// if the command fails.
func (h *Host) Output(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	if cmd.Stdout != nil {
		return nil, fmt.Errorf("netlab: %s: Output: Stdout already set", h.Name)
	}
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout = &stdout
	captureErr := cmd.Stderr == nil
	if captureErr {
		cmd.Stderr = &stderr
	}
	p, err := h.start(ctx, cmd, false)
	if err != nil {
		return nil, err
	}
	<-p.done
	if p.err != nil {
		msg := ""
		if captureErr {
			msg = "; stderr: " + strings.TrimSpace(stderr.String())
		}
		return stdout.Bytes(), fmt.Errorf("netlab: %s: %s: %w%s", h.Name, commandLine(cmd), p.err, msg)
	}
	return stdout.Bytes(), nil
}

// Stop kills every process started in the host, with its process group, and
// waits until each is reaped: the host "dies" as a machine that loses
// power, while its network stays up. New processes may be started after.
func (h *Host) Stop() error {
	h.mu.Lock()
	procs := h.procs
	h.procs = nil
	h.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(procs) > 0 {
		h.log.Info("host stopped", "killed", len(procs))
	}
	return errors.Join(errs...)
}

// PID returns the process id (also its process group id).
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Host returns the host the process runs in.
func (p *Proc) Host() *Host { return p.host }

// LogPath returns the file that receives the process's output, or "" when
// its output goes where Cmd.Stdout and Cmd.Stderr say.
func (p *Proc) LogPath() string { return p.logPath }

// Done is closed when the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits until the process exits or ctx is done, and returns the
// process's exit error (as exec.Cmd.Wait does) or ctx's error.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Signal sends sig to the process (not its group), for instance SIGTERM to
// test a graceful shutdown.
func (p *Proc) Signal(sig os.Signal) error {
	if p.Exited() {
		return os.ErrProcessDone
	}
	return p.Cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the process's group and waits until the process is
// reaped. Killing a process that has exited is not an error.
func (p *Proc) Kill() error {
	p.killGroup()
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("netlab: %s: pid %d not reaped %s after SIGKILL", p.host.Name, p.PID(), killWait)
	}
}

// killGroup sends SIGKILL to the process group the process leads. While
// the process has not been reaped its PID (the group id) cannot be reused,
// so kill(-pgid) reaches only processes forked from ours. Once it has been
// reaped, the group id could in principle name someone else's new group, so
// then only members still in the host's network namespace are killed, one
// by one through pidfds.
func (p *Proc) killGroup() {
	if !p.Exited() {
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		return
	}
	key, err := nsKeyOf(p.host.NetnsPath)
	if err != nil {
		return
	}
	for _, pid := range pidsInNetns(key) {
		if processGroup(pid) != p.PID() {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if processGroup(pid) == p.PID() {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// processGroup returns the process group id of pid, or -1.
func processGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return -1
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return pgrp
}

func commandLine(cmd *exec.Cmd) string {
	return strings.Join(cmd.Args, " ")
}

// StartInRoot starts cmd in the test process's own network namespace from
// the lab's spawner thread, so that its Pdeathsig (set to SIGKILL if
// unset) fires only when the test process (or the lab) ends, never because
// some other goroutine ended the thread it was forked from. The caller
// waits for it.
func (l *Lab) StartInRoot(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	return l.spawn.start(vnetns.None(), cmd)
}
