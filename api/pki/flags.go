package pki

import (
	"flag"
	"fmt"
	"net"
	"strings"
)

// InitFlags are the flags that say what names Init's certificates carry
// and which nodes get one, shared by `apiserver pki init` and
// `tugboat-init pki` (each has its own --dir default).
type InitFlags struct {
	serverNames, serverIPs, nodes, etcdNames, etcdIPs string
}

// Register adds the flags to fs.
func (f *InitFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.serverNames, "server-names", "", "extra DNS names the apiserver is reached by (comma-separated)")
	fs.StringVar(&f.serverIPs, "server-ips", "", "extra IP addresses the apiserver is reached by (comma-separated)")
	fs.StringVar(&f.nodes, "nodes", "", "node names that get client certificates now, instead of join tokens (comma-separated)")
	fs.StringVar(&f.etcdNames, "etcd-names", "", "extra DNS names of the etcd members (etcd, localhost, 127.0.0.1 and ::1 are always in)")
	fs.StringVar(&f.etcdIPs, "etcd-ips", "", "extra IP addresses of the etcd members (comma-separated)")
}

// Options are the InitOptions the flags give for dir; a bad address is an
// error naming its flag.
func (f *InitFlags) Options(dir string) (InitOptions, error) {
	o := InitOptions{Dir: dir, ServerNames: splitList(f.serverNames), Nodes: splitList(f.nodes), EtcdNames: splitList(f.etcdNames)}
	var err error
	if o.ServerIPs, err = parseIPs("--server-ips", f.serverIPs); err != nil {
		return o, err
	}
	if o.EtcdIPs, err = parseIPs("--etcd-ips", f.etcdIPs); err != nil {
		return o, err
	}
	return o, nil
}

func parseIPs(flag, list string) ([]net.IP, error) {
	var out []net.IP
	for _, s := range splitList(list) {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("%s: %q is not an IP address", flag, s)
		}
		out = append(out, ip)
	}
	return out, nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
