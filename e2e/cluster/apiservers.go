package cluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tugboat/tugboat/api/pki"
)

// apiserverProc is one of several apiservers (Options.APIServers), with
// what it takes to start it again.
type apiserverProc struct {
	name string
	args []string
	proc *process
}

// startAPIServers starts one etcd process and n apiservers on it, each on
// its own port of the lab's root IP.
func (c *Cluster) startAPIServers(ctx context.Context, n int) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("cluster: %d apiservers need an etcd binary (hack/install-deps.sh installs etcd-server): %w", n, err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	cport, err := freePort(lo)
	if err != nil {
		return err
	}
	pport, err := freePort(lo)
	if err != nil {
		return err
	}
	curl, purl := "https://127.0.0.1:"+strconv.Itoa(cport), "https://127.0.0.1:"+strconv.Itoa(pport)
	f := func(name string) string { return filepath.Join(c.PKIDir(), name) }
	if _, err := c.startProcess("etcd", bin, "--name", "etcd0", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--cert-file", f(pki.EtcdServerCert), "--key-file", f(pki.EtcdServerKey),
		"--trusted-ca-file", f(pki.EtcdCACert), "--client-cert-auth",
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--peer-cert-file", f(pki.EtcdPeerCert), "--peer-key-file", f(pki.EtcdPeerKey),
		"--peer-trusted-ca-file", f(pki.EtcdCACert), "--peer-client-cert-auth",
		"--initial-cluster", "etcd0="+purl, "--log-level", "warn"); err != nil {
		return err
	}
	for i := range n {
		port, err := freePort(c.Lab.RootIP)
		if err != nil {
			return err
		}
		kport, err := freePort(c.Lab.RootIP)
		if err != nil {
			return err
		}
		addr := net.JoinHostPort(c.Lab.RootIP.String(), strconv.Itoa(port))
		kaddr := net.JoinHostPort(c.Lab.RootIP.String(), strconv.Itoa(kport))
		if i == 0 {
			c.KubeServer = kaddr
		}
		name := "apiserver"
		if i > 0 {
			name += strconv.Itoa(i)
		}
		m, err := c.metricsAddr(name)
		if err != nil {
			return err
		}
		a := &apiserverProc{name: name, args: append([]string{
			"--listen", addr, "--kube-listen", kaddr, "--metrics-listen", m, "--pki-dir", c.PKIDir(),
			"--etcd-servers", curl, "--bookmark-interval", "1s"}, c.opts.APIServerArgs...)}
		if a.proc, err = c.startProcess(name, c.opts.Binaries.APIServer, a.args...); err != nil {
			return err
		}
		c.Servers = append(c.Servers, addr)
		c.apiservers = append(c.apiservers, a)
	}
	c.Server = strings.Join(c.Servers, ",")
	for i, a := range c.apiservers {
		if err := c.waitAPIServer(ctx, a.proc, c.Servers[i]); err != nil {
			return err
		}
	}
	c.Client, err = c.ClientAs("admin")
	return err
}

// KillAPIServer kills apiserver i of several (Options.APIServers) with
// SIGKILL, by its PID, and waits for it to exit.
func (c *Cluster) KillAPIServer(i int) error {
	if i < 0 || i >= len(c.apiservers) {
		return fmt.Errorf("cluster: no apiserver %d (Options.APIServers)", i)
	}
	p := c.apiservers[i].proc
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// RestartAPIServer starts apiserver i again with the same flags (and so
// the same address) and waits until it answers.
func (c *Cluster) RestartAPIServer(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.apiservers) {
		return fmt.Errorf("cluster: no apiserver %d (Options.APIServers)", i)
	}
	a := c.apiservers[i]
	select {
	case <-a.proc.done:
	default:
		return fmt.Errorf("cluster: %s is running", a.name)
	}
	p, err := c.startProcess(a.name, c.opts.Binaries.APIServer, a.args...)
	if err != nil {
		return err
	}
	a.proc = p
	return c.waitAPIServer(ctx, p, c.Servers[i])
}
