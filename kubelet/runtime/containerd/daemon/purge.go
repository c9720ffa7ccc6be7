package daemon

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

// Purge kills and deletes every task and container, with its snapshot, in
// every namespace of the containerd at address: what a teardown wants
// before Stop, so that no shim outlives containerd and nothing stays
// mounted. Every task of a namespace is sent SIGKILL first, then each is
// waited for and deleted: killing and waiting one at a time made a
// teardown of 30 running containers on a loaded machine outlast its
// deadline (the full run of make test once failed on it after every test
// had passed).
func Purge(ctx context.Context, address string) error {
	cl, err := client.New(address)
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
				// Errors are left to the delete below, which kills again.
				_ = t.Kill(nctx, syscall.SIGKILL, client.WithKillAll)
			}
		}
		for _, ctr := range cs {
			if t, err := ctr.Task(nctx, nil); err == nil {
				if err := deleteTask(nctx, t); err != nil {
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

// deleteTask kills t and deletes it; a task the shim still reports
// running ("cannot delete a running process": its processes not reaped
// yet) is waited for, up to 10 s, and deleted again.
func deleteTask(ctx context.Context, t client.Task) error {
	_, err := t.Delete(ctx, client.WithProcessKill)
	if err == nil || errdefs.IsNotFound(err) {
		return nil
	}
	if exited, werr := t.Wait(ctx); werr == nil {
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
		}
	}
	if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// UnmountUnder lazily unmounts every mount point under dir (dir itself
// included), deepest first: what a containerd, the kubelet or a killed
// test left mounted there.
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
