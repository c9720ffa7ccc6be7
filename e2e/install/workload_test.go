package install

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
)

// quickStart runs the README's quick start against a cluster: apply
// deploy/examples/web.yaml, wait for the Deployment to be available, then
// fetch its NodePort (30080) at every node IP and see answers from pods of
// every node that runs one; `tugctl logs` shows the requests.
func quickStart(t *testing.T, ctx context.Context, config string, nodeIPs []string) {
	t.Helper()
	start := time.Now()
	if _, err := tugctl(ctx, config, "apply", "-f", filepath.Join(built.moduleDir, "deploy", "examples", "web.yaml")); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 3*time.Minute, "Deployment web available", func() error {
		out, err := tugctl(ctx, config, "get", "deploy", "web", "--no-headers")
		if err != nil {
			return err
		}
		f := strings.Fields(out)
		if len(f) < 4 || f[3] != "4" {
			pods, _ := tugctl(ctx, config, "get", "pods", "-o", "wide")
			return fmt.Errorf("deployment: %s\npods:\n%s", strings.TrimSpace(out), pods)
		}
		return nil
	})
	t.Logf("Deployment web available %s after apply", time.Since(start).Round(100*time.Millisecond))

	out, err := tugctl(ctx, config, "get", "pods", "-l", "app=web", "-o", "wide", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var pod string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 7 {
			want[f[6]] = true
			pod = f[0]
		}
	}
	nodeRE := regexp.MustCompile(`node=(\S+)`)
	// A new connection per request: a kept-alive one stays with one pod.
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, ip := range nodeIPs {
		url := "http://" + ip + ":30080/"
		seen := map[string]bool{}
		wait.Eventually(t, time.Minute, "answers from every node's pods through "+url, func() error {
			resp, err := hc.Get(url)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := nodeRE.FindSubmatch(body); m != nil {
				seen[string(m[1])] = true
			}
			for n := range want {
				if !seen[n] {
					return fmt.Errorf("answers so far from pods on %v, want %v (last: %q)", keys(seen), keys(want), body)
				}
			}
			return nil
		})
	}
	logs, err := tugctl(ctx, config, "logs", pod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "listening") {
		t.Errorf("tugctl logs %s = %q, want the echo server's start line", pod, logs)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
