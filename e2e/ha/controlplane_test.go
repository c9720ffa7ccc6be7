package ha

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// proc is one process of the test's own, restartable with the same
// arguments (and so the same ports and data).
type proc struct {
	t    *testing.T
	name string
	bin  string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== start %s %s\n", p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(p.done)
}

// kill sends SIGKILL to the process (its PID only) and waits for it.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// controlPlane is n etcd members and m apiservers on loopback, sharing one
// PKI folder (`apiserver pki init`), as three control-plane machines of a
// lab would share the copied certificates.
type controlPlane struct {
	t          *testing.T
	dir        string
	pki        string
	etcd       []*proc
	etcdURLs   []string
	apiservers []*proc
	addrs      []string // gRPC addresses, one per apiserver
	metrics    []string // metrics addresses, one per apiserver
}

// handedOut holds every port freePort returned in this test process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback port free now and never returned before by
// it in this process. The port is closed again before a process binds it,
// so the kernel may offer it twice: the full run of make test once gave
// etcd1's client port to apiserver0's --kube-listen as well, and the
// apiserver could not start.
func freePort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

func loopback(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }

// startControlPlane starts members etcd members and apiservers apiservers,
// waits until every apiserver answers and stops them all at the end of t
// (printing their logs' tails if t failed).
func startControlPlane(t *testing.T, members, apiservers int, apiserverArgs ...string) *controlPlane {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd binary missing in CI: hack/install-deps.sh installs etcd-server")
		}
		t.Skip("etcd binary missing: run hack/install-deps.sh (Debian package etcd-server)")
	}
	dir := t.TempDir()
	cp := &controlPlane{t: t, dir: dir, pki: filepath.Join(dir, "pki")}
	out, err := exec.Command(apiserverBin, "pki", "init", "--dir", cp.pki, "--server-ips", "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("pki init: %v: %s", err, out)
	}
	// The Secrets' encryption key, shared by every apiserver as
	// hack/install.sh makes it.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(cp.file("encryption.key"), []byte("key1:"+base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range append(append([]*proc{}, cp.apiservers...), cp.etcd...) {
			p.kill()
			if t.Failed() {
				t.Logf("--- %s (%s):\n%s", p.name, p.log, p.tail())
			}
		}
	})
	cp.startEtcd(members)
	for range apiservers {
		cp.addAPIServer(apiserverArgs...)
	}
	for i := range cp.apiservers {
		cp.waitAPIServer(i)
	}
	return cp
}

func (cp *controlPlane) file(name string) string { return filepath.Join(cp.pki, name) }

// startEtcd starts an n-member etcd cluster, client-certificate TLS for
// clients and peers (the certificates pki init made, for 127.0.0.1).
func (cp *controlPlane) startEtcd(n int) {
	t := cp.t
	var initial []string
	peers := make([]string, n)
	for i := range n {
		peers[i] = "https://" + loopback(t)
		cp.etcdURLs = append(cp.etcdURLs, "https://"+loopback(t))
		initial = append(initial, fmt.Sprintf("etcd%d=%s", i, peers[i]))
	}
	for i := range n {
		name := fmt.Sprintf("etcd%d", i)
		p := &proc{t: t, name: name, bin: "etcd", log: filepath.Join(cp.dir, name+".log"), args: []string{
			"--name", name, "--data-dir", filepath.Join(cp.dir, name),
			"--listen-client-urls", cp.etcdURLs[i], "--advertise-client-urls", cp.etcdURLs[i],
			"--cert-file", cp.file(pki.EtcdServerCert), "--key-file", cp.file(pki.EtcdServerKey),
			"--trusted-ca-file", cp.file(pki.EtcdCACert), "--client-cert-auth",
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--peer-cert-file", cp.file(pki.EtcdPeerCert), "--peer-key-file", cp.file(pki.EtcdPeerKey),
			"--peer-trusted-ca-file", cp.file(pki.EtcdCACert), "--peer-client-cert-auth",
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "tugboat-e2e-ha",
			"--heartbeat-interval", "100", "--election-timeout", "1000",
			"--log-level", "warn",
		}}
		p.start()
		cp.etcd = append(cp.etcd, p)
	}
}

// addAPIServer starts one more apiserver on every etcd member; it does not
// wait for it (waitAPIServer does).
func (cp *controlPlane) addAPIServer(extra ...string) int {
	t := cp.t
	i := len(cp.apiservers)
	addr, metrics := loopback(t), loopback(t)
	name := fmt.Sprintf("apiserver%d", i)
	p := &proc{t: t, name: name, bin: apiserverBin, log: filepath.Join(cp.dir, name+".log"), args: append([]string{
		"--listen", addr, "--kube-listen", loopback(t), "--metrics-listen", metrics,
		"--pki-dir", cp.pki, "--etcd-servers", strings.Join(cp.etcdURLs, ","),
		"--bookmark-interval", "1s", "--encryption-key-file", cp.file("encryption.key"),
	}, extra...)}
	p.start()
	cp.apiservers = append(cp.apiservers, p)
	cp.addrs = append(cp.addrs, addr)
	cp.metrics = append(cp.metrics, metrics)
	return i
}

// waitAPIServer waits until apiserver i answers a read of its own.
func (cp *controlPlane) waitAPIServer(i int) {
	t := cp.t
	t.Helper()
	c := cp.clientFor(cp.addrs[i])
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := wait.Until(ctx, 60*time.Second, func(ctx context.Context) error {
		if !cp.apiservers[i].running() {
			return wait.Stop(fmt.Errorf("%s exited", cp.apiservers[i].name))
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := client.For[*v1.Namespace](c).Get(rctx, "", "default")
		return err
	})
	if err != nil {
		t.Fatalf("%s at %s not ready: %v\n%s", cp.apiservers[i].name, cp.addrs[i], err, cp.apiservers[i].tail())
	}
}

// Servers is every apiserver's address, as --server takes them.
func (cp *controlPlane) Servers() string { return strings.Join(cp.addrs, ",") }

// clientFor is the admin's client to server (one address or several).
func (cp *controlPlane) clientFor(server string) *client.Client {
	cp.t.Helper()
	tlsCfg, err := client.TLSFromFiles(cp.file("ca.crt"), cp.file("admin.crt"), cp.file("admin.key"))
	if err != nil {
		cp.t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: server, TLS: tlsCfg, UserAgent: "e2e-ha"})
	if err != nil {
		cp.t.Fatal(err)
	}
	return c
}

// Client is the admin's client with every apiserver's address.
func (cp *controlPlane) Client() *client.Client {
	c := cp.clientFor(cp.Servers())
	cp.t.Cleanup(func() { c.Close() })
	return c
}

// tugctl runs tugctl as the admin against server and returns its output.
func (cp *controlPlane) tugctl(server string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tugctlBin, append([]string{"--server", server,
		"--ca-file", cp.file("ca.crt"), "--cert-file", cp.file("admin.crt"), "--key-file", cp.file("admin.key")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+cp.dir, "TUGBOAT_CONFIG=", "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
