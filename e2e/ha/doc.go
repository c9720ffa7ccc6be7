// Package ha is the end-to-end test of a highly available control plane:
// real etcd processes (Debian's etcd, client-certificate TLS and peer TLS
// between members, from `apiserver pki init`), several real apiserver
// processes on them, and clients given every apiserver's address
// (`--server a:6443,b:6443`). Faults are injected by killing the test's own
// processes by PID (SIGKILL, no graceful shutdown), and the assertions are
// on objects, not on timing: every acknowledged write is stored, an
// informer sees every change exactly once across an apiserver kill, tugctl
// keeps working through the other apiserver.
//
// The harness (controlplane_test.go) needs no root: etcd and the apiservers
// listen on free loopback ports. The tests that need a node (logs and exec
// through either apiserver) use e2e/cluster and its requirements (root,
// containerd, runc, CNI plugins; hack/install-deps.sh).
package ha
