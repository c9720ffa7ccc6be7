package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/internal/atomicfile"
	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

const encryptionKeyFile = "encryption.key"

// preflight says, with the fix, what the host lacks.
func preflight(cfg Config) error {
	const deps = "apt-get install containerd runc containernetworking-plugins iptables (or hack/install-deps.sh)"
	if os.Geteuid() != 0 {
		return errors.New("tugboat up needs root (sudo tugboat up): the kubelet makes network namespaces, mounts and cgroups")
	}
	sock := cfg.ContainerdSocket
	if cfg.Runtime == kubelet.RuntimeCRI {
		sock = strings.TrimPrefix(cfg.criEndpoint(), "unix://")
	}
	if c, err := net.DialTimeout("unix", sock, 2*time.Second); err == nil {
		c.Close()
	} else if berr := daemon.Check(); berr != nil {
		return fmt.Errorf("no containerd answers at %s (%v), and the kubelet cannot start one of its own in %s: %v; install them: %s", sock, err, cfg.containerdDir(), berr, deps)
	}
	found := false
	for _, d := range cfg.CNIBinDirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no CNI bridge plugin in %s: %s", strings.Join(cfg.CNIBinDirs, ", "), deps)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("iptables not found (the CNI bridge plugin masquerades with it): %s", deps)
	}
	return nil
}

// ensurePKI makes the certificates on the first start (the apiserver's,
// every component's, the node's and the admin's) and the key that
// encrypts Secrets at rest; later starts keep them.
func ensurePKI(cfg Config, log *slog.Logger) error {
	dir := cfg.pkiDir()
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); errors.Is(err, fs.ErrNotExist) {
		o := pki.InitOptions{Dir: dir, ServerNames: []string{cfg.NodeName}, Nodes: []string{cfg.NodeName}}
		host, _, _ := net.SplitHostPort(cfg.Listen)
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
			o.ServerIPs = append(o.ServerIPs, ip)
		}
		if err := pki.Init(o); err != nil {
			return err
		}
		log.Info("made the cluster CA and certificates", "dir", dir)
	} else if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "node-"+cfg.NodeName+".crt")); err != nil {
		return fmt.Errorf("no certificate for node %q in %s (the node name changed?): use --node-name as on the first start, or remove %s to start a new cluster", cfg.NodeName, dir, cfg.DataDir)
	}
	keyPath := filepath.Join(dir, encryptionKeyFile)
	if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		line := "key1:" + base64.StdEncoding.EncodeToString(raw) + "\n"
		if err := pki.WriteFile(keyPath, []byte(line), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// adminConfigYAML is a tugctl config naming the admin credentials.
func adminConfigYAML(server, ca, crt, key string) []byte {
	return fmt.Appendf(nil, "# Written by tugboat up; admin (system:masters) of the single-node cluster.\nserver: %s\ncaFile: %s\ncertFile: %s\nkeyFile: %s\n", server, ca, crt, key)
}

// kubeconfigYAML is a kubeconfig (kubectl, client-go) for the Kubernetes
// API at https://server with the admin credentials.
func kubeconfigYAML(server, ca, crt, key string) []byte {
	return fmt.Appendf(nil, `# Written by tugboat up; admin (system:masters) of the single-node cluster, for kubectl.
apiVersion: v1
kind: Config
clusters:
- name: tugboat
  cluster: {server: "https://%s", certificate-authority: %q}
users:
- name: tugboat-admin
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: tugboat
  context: {cluster: tugboat, user: tugboat-admin, namespace: default}
current-context: tugboat
`, server, ca, crt, key)
}

// kubeconfigPath is the admin kubeconfig beside the admin config.
func (c Config) kubeconfigPath() string {
	return strings.TrimSuffix(c.AdminConfig, filepath.Ext(c.AdminConfig)) + ".kubeconfig"
}

// writeAdminConfigs writes cfg.AdminConfig and the admin kubeconfig and,
// under sudo, the invoking user's ~/.tugboat/config and
// ~/.tugboat/kubeconfig (and ~/.kube/config when that is missing or
// empty) with a copy of the admin credentials that user owns (an existing
// config not written by tugboat up is left alone).
func writeAdminConfigs(cfg Config, log *slog.Logger) error {
	dir := cfg.pkiDir()
	if err := pki.WriteFile(cfg.AdminConfig, adminConfigYAML(cfg.dialAddr(),
		filepath.Join(dir, "ca.crt"), filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")), 0o600); err != nil {
		return err
	}
	if cfg.KubeListen != "" {
		if err := pki.WriteFile(cfg.kubeconfigPath(), kubeconfigYAML(dialable(cfg.KubeListen),
			filepath.Join(dir, "ca.crt"), filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")), 0o600); err != nil {
			return err
		}
		log.Info("wrote the admin kubeconfig: export KUBECONFIG="+cfg.kubeconfigPath(), "kubeconfig", cfg.kubeconfigPath())
	}
	name := os.Getenv("SUDO_USER")
	if cfg.NoUserConfig || name == "" || name == "root" {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		log.Warn("no tugctl config for the sudo user", "user", name, "err", err)
		return nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	home := filepath.Join(u.HomeDir, ".tugboat")
	cfgPath := filepath.Join(home, "config")
	if b, err := os.ReadFile(cfgPath); err == nil && !strings.HasPrefix(string(b), upMark) {
		log.Info("left your tugctl config alone; use the admin config with TUGBOAT_CONFIG", "config", cfgPath, "admin", cfg.AdminConfig)
		return nil
	}
	creds := filepath.Join(home, "tugboat-up")
	for _, f := range []string{"ca.crt", "admin.crt", "admin.key"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := pki.WriteFile(filepath.Join(creds, f), b, 0o600); err != nil {
			return err
		}
	}
	if err := pki.WriteFile(cfgPath, adminConfigYAML(cfg.dialAddr(), filepath.Join(creds, "ca.crt"),
		filepath.Join(creds, "admin.crt"), filepath.Join(creds, "admin.key")), 0o600); err != nil {
		return err
	}
	owned := []string{home, creds, cfgPath, filepath.Join(creds, "ca.crt"), filepath.Join(creds, "admin.crt"), filepath.Join(creds, "admin.key")}
	if cfg.KubeListen != "" {
		kc := kubeconfigYAML(dialable(cfg.KubeListen), filepath.Join(creds, "ca.crt"), filepath.Join(creds, "admin.crt"), filepath.Join(creds, "admin.key"))
		paths := []string{filepath.Join(home, "kubeconfig")}
		if st, err := os.Stat(filepath.Join(u.HomeDir, ".kube", "config")); err != nil || st.Size() == 0 {
			paths = append(paths, filepath.Join(u.HomeDir, ".kube", "config"))
			owned = append(owned, filepath.Join(u.HomeDir, ".kube"))
		}
		for _, p := range paths {
			if err := pki.WriteFile(p, kc, 0o600); err != nil {
				return err
			}
			owned = append(owned, p)
		}
		log.Info("wrote a kubeconfig for the sudo user: kubectl get nodes works with KUBECONFIG="+paths[0], "user", name, "kubeconfig", paths)
	}
	for _, p := range owned {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	log.Info("wrote a tugctl config for the sudo user", "user", name, "config", cfgPath)
	return nil
}

// checkSandboxImage warns, under CRI, when the node's import folder will
// not hold the sandbox (pause) image its containerd names: pods then wait
// with FailedCreatePodSandBox saying how to import it.
func checkSandboxImage(cfg Config, log *slog.Logger) {
	if cfg.Runtime != kubelet.RuntimeCRI || cfg.RuntimeEndpoint != "" {
		return
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "kubelet", "images", "pause.tar")); err == nil {
		return
	}
	log.Warn("no sandbox (pause) image for the node's containerd: pods wait until it is imported; `make images` writes bin/images/pause.tar, give --import-images bin/images",
		"image", containerdconfig.DefaultSandboxImage)
}

// importImages copies the image archives of cfg.ImportImages into the
// kubelet's import folder (which the kubelet watches and imports from),
// skipping those already there with the same size.
func importImages(cfg Config, log *slog.Logger) error {
	if cfg.ImportImages == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(cfg.ImportImages, "*.tar"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("--import-images %s: no *.tar files (make images writes bin/images)", cfg.ImportImages)
	}
	dst := filepath.Join(cfg.DataDir, "kubelet", "images")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		out := filepath.Join(dst, filepath.Base(f))
		si, err := os.Stat(f)
		if err != nil {
			return err
		}
		if di, err := os.Stat(out); err == nil && di.Size() == si.Size() {
			continue
		}
		if err := atomicfile.Copy(out, f, 0o644); err != nil {
			return fmt.Errorf("--import-images: %w", err)
		}
		log.Info("image archive copied to the import folder", "file", filepath.Base(f))
	}
	return nil
}
