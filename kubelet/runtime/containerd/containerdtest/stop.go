package containerdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// Stop removes what tests left in the containerd (tasks are killed, so no
// shim outlives it), stops containerd by its PID (SIGTERM, SIGKILL after
// 10s), and unmounts anything still mounted under Dir. It does not remove
// Dir. Safe to call twice.
func (c *Containerd) Stop() error {
	var errs []error
	select {
	case <-c.exited:
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := c.purgeCRI(ctx); err != nil {
			errs = append(errs, fmt.Errorf("purge pod sandboxes: %w", err))
		}
		if err := c.purge(ctx); err != nil {
			errs = append(errs, fmt.Errorf("purge: %w", err))
		}
		cancel()
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		c.logger.Info("stopped private containerd", "pid", c.PID)
	}
	if err := UnmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	if c.sockDir != "" {
		_ = os.RemoveAll(c.sockDir)
	}
	return errors.Join(errs...)
}

// purge kills and deletes every task and container, in every namespace.
func (c *Containerd) purge(ctx context.Context) error {
	cl, err := client.New(c.Address)
	if err != nil {
		return err
	}
	defer cl.Close()
	nss, err := cl.NamespaceService().List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range nss {
		nctx := namespaced(ctx, ns)
		cs, err := cl.Containers(nctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ctr := range cs {
			if t, err := ctr.Task(nctx, nil); err == nil {
				if _, err := t.Delete(nctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("task %s/%s: %w", ns, ctr.ID(), err))
				}
			}
			if err := ctr.Delete(nctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("container %s/%s: %w", ns, ctr.ID(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// UnmountUnder lazily unmounts every mount point under dir, deepest first
// (the e2e harness uses it on stale runs too).
func UnmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for space).
func unescapeMountPath(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+3 < len(p) {
			var v byte
			if _, err := fmt.Sscanf(p[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func namespaced(ctx context.Context, ns string) context.Context {
	return namespaces.WithNamespace(ctx, ns)
}
