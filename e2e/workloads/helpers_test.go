package workloads

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// tugctl runs the tugctl binary as the cluster's admin.
type tugctl struct{ c *cluster.Cluster }

// run runs a command line (stdin: in) and returns its stdout; a failure
// is returned with stderr.
func (k tugctl) run(in string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pki := k.c.PKIDir()
	full := append([]string{"--server", k.c.Server, "--ca-file", filepath.Join(pki, "ca.crt"),
		"--cert-file", filepath.Join(pki, "admin.crt"), "--key-file", filepath.Join(pki, "admin.key")}, args...)
	cmd := exec.CommandContext(ctx, tugctlBin, full...)
	cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	cmd.Stdin = strings.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tugctl %s: %v: %s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// must runs a command line and fails the test on error.
func (k tugctl) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k.run("", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies a YAML manifest from stdin.
func (k tugctl) apply(t *testing.T, manifest string) {
	t.Helper()
	if _, err := k.run(manifest, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// pods lists the default namespace's pods matching selector, by name.
func pods(ctx context.Context, c *client.Client, selector string) ([]*v1.Pod, error) {
	ps, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: selector})
	sort.Slice(ps, func(i, j int) bool { return ps[i].GetMetadata().GetName() < ps[j].GetMetadata().GetName() })
	return ps, err
}

func condition(conds []*v1.Condition, typ string) *v1.Condition {
	for _, c := range conds {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

func isReady(p *v1.Pod) bool {
	c := condition(p.GetStatus().GetConditions(), "Ready")
	return c != nil && c.GetStatus() == "True" && p.GetMetadata().GetDeletionTimestamp() == nil
}

// readyByNode counts the ready pods matching selector per node.
func readyByNode(ctx context.Context, c *client.Client, selector string) (map[string]int, error) {
	ps, err := pods(ctx, c, selector)
	out := map[string]int{}
	for _, p := range ps {
		if isReady(p) {
			out[p.GetSpec().GetNodeName()]++
		}
	}
	return out, err
}

// eventually waits (api/wait) for cond, with a context bounded by timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	wait.Eventually(t, timeout, what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cond(ctx)
	})
}

// setTaint adds (or with add false removes) a taint on a node.
func setTaint(t *testing.T, c *client.Client, node string, taint *v1.Taint, add bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.For[*v1.Node](c).Mutate(ctx, "", node, false, func(n *v1.Node) error {
		var keep []*v1.Taint
		for _, x := range n.GetSpec().GetTaints() {
			if x.GetKey() != taint.GetKey() {
				keep = append(keep, x)
			}
		}
		if add {
			keep = append(keep, taint)
		}
		n.Spec.Taints = keep
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
