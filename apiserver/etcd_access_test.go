package apiserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func init() { helpers["etcd-probe"] = etcdProbe }

// probeKey is what the probe tries to write: a ClusterRoleBinding's key,
// the write that would make anyone cluster-admin.
const probeKey = "/registry/clusterrolebindings/probe-was-here"

// etcdProbe tries to read and write etcd at every endpoint in
// PROBE_ENDPOINTS (comma-separated) and prints one line per endpoint:
// "OPEN <endpoint>: <what worked>" or "closed <endpoint>: <error>".
func etcdProbe() int {
	for _, ep := range strings.Split(os.Getenv("PROBE_ENDPOINTS"), ",") {
		fmt.Println(probeEndpoint(ep))
	}
	return 0
}

func probeEndpoint(ep string) string {
	if path, ok := strings.CutPrefix(ep, "unix://"); ok {
		c, err := net.DialTimeout("unix", path, 2*time.Second)
		if err != nil {
			return fmt.Sprintf("closed %s: %v", ep, err)
		}
		c.Close()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Sprintf("closed %s: %v", ep, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var worked []string
	if resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
		worked = append(worked, fmt.Sprintf("read %d keys", resp.Count))
	}
	if _, err = cli.Put(ctx, probeKey, "x"); err == nil {
		worked = append(worked, "wrote "+probeKey)
	}
	if len(worked) > 0 {
		return fmt.Sprintf("OPEN %s: %s", ep, strings.Join(worked, ", "))
	}
	return fmt.Sprintf("closed %s: %v", ep, err)
}

// TestEmbeddedEtcdClosedToLocalUsers starts an apiserver with embedded
// etcd in a data dir every user could enter, then, as the user nobody,
// tries to read and write etcd at its socket and at every TCP port the
// apiserver opened: all must be refused, and the only new TCP listener
// is the apiserver's own gRPC port.
func TestEmbeddedEtcdClosedToLocalUsers(t *testing.T) {
	requireRoot(t, "runs a process as the user nobody")
	dataDir := filepath.Join(openTempDir(t), "etcd")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	before := listeningPorts(t)
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) { c.DataDir = dataDir })
	// The apiserver's own ports: gRPC and, when on, the Kubernetes API.
	own := map[string]bool{}
	for _, addr := range []string{s.Addr(), s.KubeAddr()} {
		if _, port, err := net.SplitHostPort(addr); err == nil {
			own[port] = true
		}
	}
	endpoints := []string{"unix://" + filepath.Join(dataDir, apiserver.EtcdSocket)}
	var opened []string
	for port := range listeningPorts(t) {
		if before[port] {
			continue
		}
		endpoints = append(endpoints, "http://127.0.0.1:"+port)
		if !own[port] {
			opened = append(opened, port)
		}
	}
	if len(opened) > 0 {
		t.Errorf("the apiserver opened TCP ports %v besides its own API ports", opened)
	}
	cmd := helperCommand(t, "etcd-probe", "PROBE_ENDPOINTS="+strings.Join(endpoints, ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "OPEN ") {
			t.Errorf("a local unprivileged user reaches etcd: %s", line)
		}
	}
	ctx := ctxT(t)
	resp, err := s.Etcd().Get(ctx, probeKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) > 0 {
		t.Errorf("nobody wrote %s", probeKey)
	}
}

// listeningPorts are the TCP ports this process listens on (IPv4 and IPv6).
func listeningPorts(t *testing.T) map[string]bool {
	t.Helper()
	mine := map[string]bool{} // socket inodes of this process
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !mine[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			p, _ := strconv.ParseUint(hexPort, 16, 16)
			ports[strconv.FormatUint(p, 10)] = true
		}
		f.Close()
	}
	return ports
}
