package pod

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// A container's termination message, as Kubernetes' kubelet has it: every
// attempt gets an empty, world-writable file of its own under the pod's
// directory, bind-mounted at its terminationMessagePath; once the attempt
// has exited, the file's content (at most maxTerminationMessage bytes) is
// its state.terminated.message. With terminationMessagePolicy
// FallbackToLogsOnError, a failed attempt that wrote nothing there gets
// the end of its log instead (the last fallbackLogLines lines, at most
// maxFallbackLog bytes).
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	maxFallbackLog        = 2048
)

// terminationLogPath is the host file of a container attempt's
// termination message.
func (c Config) terminationLogPath(uid, container string, attempt uint32) string {
	return filepath.Join(c.PodDir(uid), "containers", container, fmt.Sprintf("%d.termination-log", attempt))
}

// terminationMount makes the attempt's termination message file (empty,
// mode 0666 so any user of the container can write it) and mounts it at
// the container's terminationMessagePath; none for an empty path.
func (c Config) terminationMount(uid string, ctr *v1.Container, attempt uint32) ([]runtime.Mount, error) {
	if ctr.TerminationMessagePath == "" {
		return nil, nil
	}
	p := c.terminationLogPath(uid, ctr.Name, attempt)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	f.Close()
	if err := os.Chmod(p, 0o666); err != nil { // past the umask
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	return []runtime.Mount{{HostPath: p, ContainerPath: ctr.TerminationMessagePath}}, nil
}

// fillTerminationMessages sets the message of the pod's exited containers
// that have none from the runtime, from their termination message file
// (or log). An exited attempt's message cannot change, so it is read once
// per container ID and kept by the worker.
func (w *worker) fillTerminationMessages(pod *v1.Pod, cs []runtime.ContainerStatus) {
	for i := range cs {
		c := &cs[i]
		if c.State != runtime.ContainerExited || c.Message != "" {
			continue
		}
		msg, ok := w.messages[c.ID]
		if !ok {
			spec := specContainer(pod, c.Name)
			if spec == nil {
				continue
			}
			msg = w.m.cfg.terminationMessage(w.uid, spec, c)
			w.messages[c.ID] = msg
		}
		c.Message = msg
	}
}

// terminationMessage reads an exited attempt's message.
func (c Config) terminationMessage(uid string, spec *v1.Container, cs *runtime.ContainerStatus) string {
	var msg string
	if spec.TerminationMessagePath != "" {
		if f, err := os.Open(c.terminationLogPath(uid, spec.Name, cs.Attempt)); err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
			f.Close()
			msg = string(b)
		}
	}
	if msg != "" || spec.TerminationMessagePolicy != "FallbackToLogsOnError" || cs.ExitCode == 0 || cs.LogPath == "" {
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var b bytes.Buffer
	err := runtime.ReadLog(ctx, cs.LogPath, runtime.LogOptions{TailLines: fallbackLogLines, Format: cs.LogFormat}, &b)
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return ""
	}
	out := b.Bytes()
	if len(out) > maxFallbackLog {
		out = out[len(out)-maxFallbackLog:]
	}
	return string(out)
}

// specContainer finds a container of the pod's spec by name.
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for _, c := range pod.GetSpec().GetInitContainers() {
		if c.Name == name {
			return c
		}
	}
	for _, c := range pod.GetSpec().GetContainers() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
