// Package securitytest holds the security-context cases both runtime
// backends (kubelet/runtime/containerd and kubelet/runtime/cri) must pass
// against a real containerd, so the kubelet gets the same container from
// either: each case is a busybox script run with a SecurityConfig, the
// lines its log must hold, and a check of what it left in the shared
// host directory.
package securitytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Case is one container of the security pod.
type Case struct {
	Name     string
	Security runtime.SecurityConfig
	// Script runs under sh -c; /data is the shared host directory
	// (mode 0777, read-write).
	Script string
	// Want are substrings of the container's log.
	Want []string
	// Check, if set, looks at the shared host directory after the
	// container exited.
	Check func(dir string) error
}

// DataPath is where the shared host directory is mounted.
const DataPath = "/data"

// Sysctls are the sandbox's sysctls the "sysctls" case reads back.
var Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"}

// probe prints the process's capabilities, no_new_privs and seccomp mode,
// whether it can ping (raw sockets need NET_RAW) and whether a masked
// /proc path is empty.
const probe = `grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status
ping -c1 -W1 127.0.0.1 >/dev/null 2>&1 && echo ping-ok || echo ping-failed
echo timer_list=$(cat /proc/timer_list 2>/dev/null | wc -c)
`

// DefaultCaps is containerd's default capability set as CapEff shows it
// (CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
// NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP).
const DefaultCaps = "CapEff:\t00000000a80425fb"

func id(v int64) *int64 { return &v }

// SeccompDenyMkdir is a Localhost seccomp profile (the OCI LinuxSeccomp
// form) that fails mkdir with EPERM and allows everything else.
const SeccompDenyMkdir = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`

// Cases are the security cases; profileDir holds deny-mkdir.json
// (WriteProfile).
func Cases(profileDir string) []Case {
	return []Case{
		{Name: "default", Script: probe,
			Want: []string{DefaultCaps, "NoNewPrivs:\t0", "Seccomp:\t0", "ping-ok", "timer_list=0"}},
		{Name: "run-as-user", Security: runtime.SecurityConfig{RunAsUser: id(1000), RunAsGroup: id(3000), SupplementalGroups: []int64{4000}},
			Script: `id; touch /data/by-1000 && echo wrote-data; touch /etc/by-1000 2>/dev/null && echo wrote-etc || echo etc-denied`,
			Want:   []string{"uid=1000 gid=3000", "4000", "wrote-data", "etc-denied"},
			Check: func(dir string) error {
				fi, err := os.Stat(filepath.Join(dir, "by-1000"))
				if err != nil {
					return err
				}
				st := fi.Sys().(*syscall.Stat_t)
				if st.Uid != 1000 || st.Gid != 3000 {
					return fmt.Errorf("by-1000 is owned by %d:%d, want 1000:3000", st.Uid, st.Gid)
				}
				return nil
			}},
		{Name: "read-only-rootfs", Security: runtime.SecurityConfig{ReadOnlyRootfs: true},
			Script: `touch /x 2>&1 || echo rootfs-denied; touch /data/ro-ok && echo data-writable`,
			Want:   []string{"Read-only file system", "rootfs-denied", "data-writable"}},
		{Name: "drop-net-raw", Security: runtime.SecurityConfig{CapDrop: []string{"NET_RAW"}}, Script: probe,
			Want: []string{"CapEff:\t00000000a80405fb", "ping-failed"}},
		{Name: "drop-all-add-one", Security: runtime.SecurityConfig{CapDrop: []string{"ALL"}, CapAdd: []string{"NET_BIND_SERVICE"}}, Script: probe,
			Want: []string{"CapEff:\t0000000000000400", "ping-failed"}},
		{Name: "restricted", Security: runtime.SecurityConfig{NoNewPrivs: true, Seccomp: runtime.SeccompProfile{Type: runtime.SeccompRuntimeDefault}}, Script: probe,
			Want: []string{"NoNewPrivs:\t1", "Seccomp:\t2"}},
		{Name: "seccomp-localhost", Security: runtime.SecurityConfig{Seccomp: runtime.SeccompProfile{Type: runtime.SeccompLocalhost, LocalhostPath: filepath.Join(profileDir, "deny-mkdir.json")}},
			Script: `mkdir /tmp/d 2>&1 || echo mkdir-denied; grep Seccomp: /proc/self/status`,
			Want:   []string{"Operation not permitted", "mkdir-denied", "Seccomp:\t2"}},
		{Name: "privileged", Security: runtime.SecurityConfig{Privileged: true},
			Script: `grep -E '^(CapEff|Seccomp):' /proc/self/status; [ $(cat /proc/timer_list | wc -c) -gt 0 ] && echo timer_list-readable`,
			Want:   []string{"Seccomp:\t0", "timer_list-readable", ownCaps()}},
		{Name: "sysctls", Script: `cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/shm_rmid_forced | tr '\n' ' '`,
			Want: []string{"0 1"}},
	}
}

// ownCaps is this process's CapEff line: what a privileged container gets
// (every capability the runtime has, as containerd's CRI plugin gives).
func ownCaps() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "CapEff: unreadable: " + err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			return l
		}
	}
	return "CapEff: missing"
}

// WriteProfile writes deny-mkdir.json into dir.
func WriteProfile(dir string) error {
	return os.WriteFile(filepath.Join(dir, "deny-mkdir.json"), []byte(SeccompDenyMkdir), 0o644)
}
