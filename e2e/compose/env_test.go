package compose

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

// requireDocker skips t (fails it under CI=true) unless docker answers and
// a compose (v2 plugin or v1) is installed.
func requireDocker(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("docker"); err != nil {
		why = "docker is not installed"
	} else if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		why = "the docker daemon does not answer: " + strings.TrimSpace(string(out))
	} else if exec.Command("docker", "compose", "version").Run() != nil && exec.Command("docker-compose", "version").Run() != nil {
		why = "neither docker compose (v2) nor docker-compose (v1) is installed"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: not skipping)", why)
	}
	t.Skipf("%s; skipping the compose cluster test", why)
}

// env is one test cluster's settings: a project of its own, an image tag
// of its own, free host ports, a tugctl config in a temp dir.
type env struct {
	t        *testing.T
	module   string
	project  string
	tag      string
	config   string
	apiPort  int
	kubePort int
	regPort  int
	nodePort [2]int
	// ha: make up HA=1 (deploy/docker/docker-compose.ha.yaml), whose
	// second apiserver publishes apiPort2 and kubePort2.
	ha        bool
	apiPort2  int
	kubePort2 int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mod, err := cluster.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	e := &env{t: t, module: mod, project: "tugboat-e2e-" + id, tag: "e2e-" + id, config: filepath.Join(t.TempDir(), "config")}
	ports := freePorts(t, 7)
	e.apiPort, e.regPort, e.nodePort[0], e.nodePort[1], e.kubePort = ports[0], ports[1], ports[2], ports[3], ports[4]
	e.apiPort2, e.kubePort2 = ports[5], ports[6]
	return e
}

// apiservers, etcdMembers and controlServices name the env's compose
// services.
func (e *env) apiservers() []string {
	if e.ha {
		return []string{"apiserver-1", "apiserver-2"}
	}
	return []string{"apiserver"}
}

func (e *env) etcdMembers() []string {
	if e.ha {
		return []string{"etcd-1", "etcd-2", "etcd-3"}
	}
	return []string{"etcd"}
}

func (e *env) controlServices() []string {
	s := append(e.etcdMembers(), e.apiservers()...)
	for _, c := range []string{"scheduler", "controller-manager"} {
		if !e.ha {
			s = append(s, c)
			continue
		}
		s = append(s, c+"-1", c+"-2")
	}
	return s
}

// vars are the environment of hack/up.sh and hack/down.sh for this env.
func (e *env) vars() []string {
	return append(os.Environ(),
		"TUGBOAT_PROJECT="+e.project,
		"TUGBOAT_TAG="+e.tag,
		"TUGBOAT_CONFIG="+e.config,
		"TUGBOAT_API_PORT="+strconv.Itoa(e.apiPort),
		"TUGBOAT_KUBE_PORT="+strconv.Itoa(e.kubePort),
		"TUGBOAT_REGISTRY_PORT="+strconv.Itoa(e.regPort),
		"TUGBOAT_NODEPORT_1="+strconv.Itoa(e.nodePort[0]),
		"TUGBOAT_NODEPORT_2="+strconv.Itoa(e.nodePort[1]),
		"TUGBOAT_API_PORT_2="+strconv.Itoa(e.apiPort2),
		"TUGBOAT_KUBE_PORT_2="+strconv.Itoa(e.kubePort2),
		"TUGBOAT_HA="+map[bool]string{true: "1", false: ""}[e.ha],
	)
}

// script runs a hack/ script with the env's settings (plus extra
// variables) and returns its combined output.
func (e *env) script(ctx context.Context, extra []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.module, "hack", name), args...)
	cmd.Dir = e.module
	cmd.Env = append(e.vars(), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// tugctl runs bin/tugctl (built by make up) with the env's config.
func (e *env) tugctl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.module, "bin", "tugctl"), append([]string{"--config", e.config}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("tugctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// container is the id of a service's container in this project.
func (e *env) container(service string) string {
	out, _ := exec.Command("docker", "ps", "-aq",
		"--filter", "label=com.docker.compose.project="+e.project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	return strings.TrimSpace(string(out))
}

// runningService is the first of services whose container runs (the
// first one when none does).
func (e *env) runningService(services []string) string {
	for _, s := range services {
		if id := e.container(s); id != "" {
			out, _ := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", id).Output()
			if strings.TrimSpace(string(out)) == "true" {
				return s
			}
		}
	}
	return services[0]
}

// leftovers lists what of this project docker still has.
func (e *env) leftovers() []string {
	var left []string
	for _, what := range []string{"ps -aq", "network ls -q", "volume ls -q"} {
		args := append(strings.Fields(what), "--filter", "label=com.docker.compose.project="+e.project)
		out, _ := exec.Command("docker", args...).Output()
		for _, id := range strings.Fields(string(out)) {
			left = append(left, strings.Fields(what)[0]+" "+id)
		}
	}
	out, _ := exec.Command("docker", "images", "-q", "--filter", "reference=tugboat/*:"+e.tag).Output()
	for _, id := range strings.Fields(string(out)) {
		left = append(left, "image "+id)
	}
	return left
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
