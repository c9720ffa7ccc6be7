package runtime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tugboat/tugboat/internal/atomicfile"
)

// DNSConfig is what a pod's /etc/resolv.conf says: for ClusterFirst, the
// cluster DNS address and the search path
// "<ns>.svc.<domain> svc.<domain> <domain>" with ndots:5.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// HostAlias adds a line to the pod's /etc/hosts (spec.hostAliases).
type HostAlias struct {
	IP        string
	Hostnames []string
}

// PodEtc is the content of a pod's /etc/hosts, /etc/hostname and
// /etc/resolv.conf.
type PodEtc struct {
	Hostname string
	// IPs are the pod's addresses; each maps to Hostname in /etc/hosts.
	IPs         []string
	DNS         DNSConfig
	HostAliases []HostAlias
}

// Names of the files WriteEtcFiles writes in its directory.
const (
	HostsFileName      = "hosts"
	HostnameFileName   = "hostname"
	ResolvConfFileName = "resolv.conf"
)

// WriteEtcFiles writes hosts, hostname and resolv.conf for a pod into dir
// (created if needed, usually the pod's directory under the kubelet root)
// and returns their paths for SandboxConfig.EtcFiles. Each file is replaced
// atomically. A file already bind-mounted into a running container keeps
// its old content there, so write before creating containers.
func WriteEtcFiles(dir string, e PodEtc) (EtcFiles, error) {
	if e.Hostname == "" {
		return EtcFiles{}, fmt.Errorf("etc files: hostname: required: %w", ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return EtcFiles{}, fmt.Errorf("etc files: %w", err)
	}
	files := EtcFilesIn(dir)
	for _, f := range []struct {
		path    string
		content []byte
	}{
		{files.HostsPath, HostsFile(e)},
		{files.HostnamePath, []byte(e.Hostname + "\n")},
		{files.ResolvConfPath, ResolvConf(e.DNS)},
	} {
		if err := atomicfile.Write(f.path, bytes.NewReader(f.content), 0o644); err != nil {
			return EtcFiles{}, fmt.Errorf("etc files: %w", err)
		}
	}
	return files, nil
}

// EtcFilesIn returns the paths WriteEtcFiles uses in dir. A sandbox can be
// given them before the files are written (the pod IP for /etc/hosts is
// known only after CNI ADD, which needs the sandbox ID).
func EtcFilesIn(dir string) EtcFiles {
	return EtcFiles{
		HostsPath:      filepath.Join(dir, HostsFileName),
		HostnamePath:   filepath.Join(dir, HostnameFileName),
		ResolvConfPath: filepath.Join(dir, ResolvConfFileName),
	}
}

// HostsFile renders a Kubernetes-style managed /etc/hosts.
func HostsFile(e PodEtc) []byte {
	var b bytes.Buffer
	b.WriteString("# Tugboat-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range e.IPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, e.Hostname)
	}
	if len(e.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range e.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// ResolvConf renders /etc/resolv.conf.
func ResolvConf(d DNSConfig) []byte {
	var b bytes.Buffer
	if len(d.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(d.Searches, " "))
	}
	for _, s := range d.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(d.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(d.Options, " "))
	}
	return b.Bytes()
}
