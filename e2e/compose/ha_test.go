package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/kubeapi/kubectltest"
)

// TestComposeHACluster is the CI end-to-end test of `make up HA=1`: the
// HA compose cluster (three etcd members, two apiservers, two schedulers,
// two controller-managers) comes up, each apiserver serves tugctl and
// kubectl alone, tugctl get cs shows every component healthy; then one
// apiserver and the leading etcd member are killed (docker kill), the
// whole walkthrough of TestComposeCluster passes on what is left, get cs
// names the two unhealthy; started again, they rejoin and all are healthy.
func TestComposeHACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs a cluster; skipped with -short")
	}
	requireDocker(t)
	e := newEnv(t)
	e.ha = true
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	upCluster(t, ctx, e)

	// tugctl is given both apiservers; each one alone serves it, and
	// kubectl (one server per kubeconfig cluster) through either one.
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	both := fmt.Sprintf("server: 127.0.0.1:%d,127.0.0.1:%d", e.apiPort, e.apiPort2)
	if !strings.Contains(string(cfg), both) {
		t.Errorf("tugctl config lacks %q:\n%s", both, cfg)
	}
	kubeconfig := filepath.Join(filepath.Dir(e.config), "kubeconfig")
	for i, port := range []int{e.apiPort, e.apiPort2} {
		out, err := e.tugctl(ctx, "--server", "127.0.0.1:"+strconv.Itoa(port), "get", "nodes", "--no-headers")
		if err != nil || strings.Count(out, " Ready ") != 2 {
			t.Errorf("tugctl get nodes through apiserver-%d alone: %v\n%s", i+1, err, out)
		}
	}
	for i, port := range []int{e.kubePort, e.kubePort2} {
		kc := exec.CommandContext(ctx, kubectltest.Path(t), "--kubeconfig", kubeconfig,
			"--server", "https://127.0.0.1:"+strconv.Itoa(port), "get", "nodes", "--no-headers")
		if out, err := kc.CombinedOutput(); err != nil || strings.Count(string(out), " Ready ") != 2 {
			t.Errorf("kubectl get nodes through apiserver-%d alone: %v\n%s", i+1, err, out)
		}
	}
	// tugctl get cs: three etcd members (one leads), both apiservers, a
	// leading scheduler and controller-manager, all healthy.
	var cs map[string]componentRow
	wait.Eventually(t, 2*time.Minute, "every component healthy in get cs", func() error {
		var err error
		if cs, err = e.componentStatuses(ctx); err != nil {
			return err
		}
		return allHealthy(cs, 3+2+2)
	})
	leader := ""
	for name, r := range cs {
		if strings.HasPrefix(name, "etcd-") && strings.HasSuffix(r.message, ", leader") {
			leader = strings.TrimSuffix(strings.Fields(r.message)[2], ",") // "ok, member etcd-2, ..."
		}
	}
	if leader == "" {
		t.Fatalf("no etcd member leads in get cs: %v", cs)
	}

	// The leading etcd member and one apiserver die.
	killed := []string{"apiserver-1", leader}
	for _, s := range killed {
		if out, err := exec.CommandContext(ctx, "docker", "kill", e.container(s)).CombinedOutput(); err != nil {
			t.Fatalf("docker kill %s: %v: %s", s, err, out)
		}
	}
	t.Logf("killed %v", killed)
	walkthrough(t, ctx, e)
	for _, s := range killed {
		out, _ := exec.Command("docker", "inspect", "-f", "{{.State.Status}} (restarts {{.RestartCount}})", e.container(s)).Output()
		t.Logf("%s after the walkthrough: %s", s, strings.TrimSpace(string(out)))
	}
	// get cs names them unhealthy (the apiserver once its identity Lease
	// is 30 s old: the walkthrough took longer), through apiserver-2.
	wait.Eventually(t, time.Minute, "the killed member and apiserver unhealthy in get cs", func() error {
		cs, err := e.componentStatuses(ctx)
		if err != nil {
			return err
		}
		bad := map[string]string{}
		for name, r := range cs {
			if r.status != "Healthy" {
				bad[name] = r.errText
			}
		}
		ok := len(bad) == 2
		for name, why := range bad {
			ok = ok && (strings.HasPrefix(name, "etcd-") && strings.Contains(why, "https://"+leader+":2379") ||
				strings.HasPrefix(name, "apiserver-") && strings.Contains(why, "apiserver-1:6443: not renewed"))
		}
		if !ok {
			return fmt.Errorf("unhealthy: %v", bad)
		}
		return nil
	})

	for _, args := range [][]string{{"get", "cs"}, {"cluster", "status"}} {
		out, err := e.tugctl(ctx, args...)
		t.Logf("tugctl %s (%v):\n%s", strings.Join(args, " "), err, out)
	}

	// Started again, they rejoin: the apiserver serves alone.
	for _, s := range killed {
		if out, err := exec.CommandContext(ctx, "docker", "start", e.container(s)).CombinedOutput(); err != nil {
			t.Fatalf("docker start %s: %v: %s", s, err, out)
		}
	}
	wait.Eventually(t, 2*time.Minute, "every component healthy again in get cs", func() error {
		cs, err := e.componentStatuses(ctx)
		if err != nil {
			return err
		}
		return allHealthy(cs, 3+2+2)
	})
	wait.Eventually(t, 2*time.Minute, "apiserver-1 serves again", func() error {
		out, err := e.tugctl(ctx, "--server", "127.0.0.1:"+strconv.Itoa(e.apiPort), "get", "nodes", "--no-headers")
		if err != nil {
			return err
		}
		if n := strings.Count(out, " Ready "); n < 1 {
			return fmt.Errorf("nodes through apiserver-1:\n%s", out)
		}
		return nil
	})
}

// componentRow is one row of tugctl get cs.
type componentRow struct{ status, message, errText string }

// componentStatuses runs tugctl get cs -o json.
func (e *env) componentStatuses(ctx context.Context) (map[string]componentRow, error) {
	out, err := e.tugctl(ctx, "get", "cs", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata   struct{ Name string }
			Conditions []struct{ Status, Message, Error string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("get cs -o json: %v\n%s", err, out)
	}
	rows := map[string]componentRow{}
	for _, it := range list.Items {
		if len(it.Conditions) != 1 {
			return nil, fmt.Errorf("%s: conditions %v", it.Metadata.Name, it.Conditions)
		}
		c := it.Conditions[0]
		st := "Unhealthy"
		if c.Status == "True" {
			st = "Healthy"
		}
		rows[it.Metadata.Name] = componentRow{st, c.Message, c.Error}
	}
	return rows, nil
}

// allHealthy: n components, every one Healthy.
func allHealthy(cs map[string]componentRow, n int) error {
	bad := 0
	for _, r := range cs {
		if r.status != "Healthy" {
			bad++
		}
	}
	if len(cs) != n || bad > 0 {
		return fmt.Errorf("%d components (want %d), %d unhealthy: %v", len(cs), n, bad, cs)
	}
	return nil
}
