package network

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/containernetworking/cni/libcni"

	"github.com/tugboat/tugboat/internal/atomicfile"
)

// cniVersion of the default config; Debian 12's plugins (1.1.1) speak it.
const cniVersion = "1.0.0"

// DefaultConfList renders the default conflist for cfg: a bridge that is
// the pods' gateway and host-local IPAM on the pod CIDR, portmap for
// hostPorts, and loopback (unless the runtime brings loopback up itself,
// RuntimeLoopback). The bridge's ipMasq stays off: the node
// masquerades its pods' egress with one rule (EnsureMasquerade).
func DefaultConfList(cfg Config) ([]byte, error) {
	cfg.setDefaults()
	if cfg.PodCIDR == "" {
		return nil, errors.New("default CNI config: no pod CIDR")
	}
	bridge := map[string]any{
		"type":        "bridge",
		"bridge":      cfg.BridgeName,
		"isGateway":   true,
		"ipMasq":      false,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": cfg.PodCIDR}}},
			"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
			"dataDir": cfg.IPAMDataDir(),
		},
	}
	if cfg.MTU > 0 {
		bridge["mtu"] = cfg.MTU
	}
	plugins := []any{
		bridge,
		map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
	}
	if !cfg.RuntimeLoopback {
		plugins = append(plugins, map[string]any{"type": "loopback"})
	}
	list := map[string]any{"cniVersion": cniVersion, "name": cfg.NetworkName, "plugins": plugins}
	return json.MarshalIndent(list, "", "  ")
}

// confFiles lists the CNI configs in dir, in the order CNI runtimes use:
// sorted by name, the first one wins.
func confFiles(dir string) ([]string, error) {
	files, err := libcni.ConfFiles(dir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// EnsureConfig writes the default conflist (DefaultConfFile) into ConfDir
// unless the directory holds a config of the operator's. A default config
// from an earlier run is rewritten if it differs (a new pod CIDR). It
// returns the path of the config in effect and whether it wrote it. With no
// pod CIDR it writes nothing.
func (m *Manager) EnsureConfig() (path string, wrote bool, err error) {
	files, err := confFiles(m.cfg.ConfDir)
	if err != nil {
		return "", false, fmt.Errorf("CNI config dir %s: %w", m.cfg.ConfDir, err)
	}
	ours := filepath.Join(m.cfg.ConfDir, DefaultConfFile)
	for _, f := range files {
		if f != ours {
			return files[0], false, nil // the operator's config
		}
	}
	if m.cfg.PodCIDR == "" {
		if len(files) > 0 {
			return files[0], false, nil
		}
		return "", false, nil
	}
	want, err := DefaultConfList(m.cfg)
	if err != nil {
		return "", false, err
	}
	if have, err := os.ReadFile(ours); err == nil && bytes.Equal(have, want) {
		return ours, false, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if err := m.makeConfDir(); err != nil {
		return "", false, err
	}
	if err := atomicfile.Write(ours, bytes.NewReader(want), 0o644); err != nil {
		return "", false, err
	}
	m.logger.Info("wrote default CNI config", "path", ours, "podCIDR", m.cfg.PodCIDR)
	return ours, true, nil
}

// loadNetwork loads the network config in effect: the first file in
// ConfDir.
func (m *Manager) loadNetwork() (*libcni.NetworkConfigList, string, error) {
	files, err := confFiles(m.cfg.ConfDir)
	if err != nil {
		return nil, "", fmt.Errorf("CNI config dir %s: %w", m.cfg.ConfDir, err)
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no CNI network config in %s: %w", m.cfg.ConfDir, ErrNotReady)
	}
	f := files[0]
	var list *libcni.NetworkConfigList
	if filepath.Ext(f) == ".conflist" {
		list, err = libcni.NetworkConfFromFile(f)
	} else {
		var conf *libcni.NetworkConfig
		if conf, err = libcni.ConfFromFile(f); err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	}
	if err != nil {
		return nil, f, fmt.Errorf("CNI config %s: %v: %w", f, err, ErrNotReady)
	}
	if len(list.Plugins) == 0 {
		return nil, f, fmt.Errorf("CNI config %s: no plugins: %w", f, ErrNotReady)
	}
	return list, f, nil
}

// podChain returns the plugin chain CNI ADD runs for pod. The kubelet's
// own default config (DefaultConfFile, which EnsureConfig owns) lists every
// plugin a pod may need; a pod runs only those it does: portmap only when
// it has hostPorts, and never loopback, since CreateNetNS brings lo up
// already. Each plugin is a process start, and portmap rewrites the node's
// iptables on every ADD, so this halves a pod's CNI time. An operator's
// config runs as written. libcni caches the chain an ADD ran with, and
// TearDownPod runs DEL with that cached chain, so every attachment is
// torn down by the plugins that made it.
func (m *Manager) podChain(list *libcni.NetworkConfigList, file string, pod PodNetwork) (*libcni.NetworkConfigList, error) {
	if file != filepath.Join(m.cfg.ConfDir, DefaultConfFile) {
		return list, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(list.Bytes, &raw); err != nil {
		return nil, fmt.Errorf("CNI config %s: %w", file, err)
	}
	var plugins []json.RawMessage
	if err := json.Unmarshal(raw["plugins"], &plugins); err != nil || len(plugins) != len(list.Plugins) {
		return nil, fmt.Errorf("CNI config %s: plugins do not parse: %v", file, err)
	}
	keep := make([]json.RawMessage, 0, len(plugins))
	for i, p := range list.Plugins {
		switch p.Network.Type {
		case "loopback":
			continue
		case "portmap":
			if len(pod.PortMappings) == 0 {
				continue
			}
		}
		keep = append(keep, plugins[i])
	}
	if len(keep) == len(plugins) {
		return list, nil
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("CNI config %s: no plugin left for pod %s/%s", file, pod.Namespace, pod.Name)
	}
	var err error
	if raw["plugins"], err = json.Marshal(keep); err != nil {
		return nil, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return libcni.NetworkConfFromBytes(b)
}
