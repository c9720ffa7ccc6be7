// Package pod is the kubelet's pod logic: a pure per-pod state machine
// driven through the runtime.Runtime interface, so it is tested with a
// fake runtime and the containerd code stays thin.
//
// # Loop
//
// A Manager keeps one worker per pod bound to the node (fed by the pod
// informer through UpdatePod and DeletePod). A worker's sync is
// level-triggered and idempotent: it reads the pod's sandboxes and
// containers from the runtime (found by the pod-UID labels the runtime
// puts on them, which is also how a restarted kubelet adopts running
// containers without restarting them), converges one step, and publishes
// the pod's status:
//
//  1. a pod being deleted: stop its containers (stop signal, grace period,
//     SIGKILL), tear the sandbox down (CNI DEL included), remove its
//     files, delete it from the API with grace 0;
//  2. no usable sandbox: network namespace, sandbox record, CNI ADD on the
//     node's pod CIDR, /etc/hosts, hostname and resolv.conf (cluster DNS);
//  3. init containers one by one, then containers in spec order: image per
//     pull policy (with back-off and an import hint), env (fieldRef,
//     ConfigMap/Secret refs), volumes, cgroup limits; create, start;
//     restart per restartPolicy with exponential back-off
//     (CrashLoopBackOff); kill on a failed liveness or startup probe;
//  4. status: phase, conditions with transition times (including the
//     timeline conditions documented in status.go), pod and host IP,
//     container states with reasons, exit codes and restart counts —
//     written in the background by the status manager.
//
// A worker syncs when woken (spec change, deletion, a container that
// changed state as seen by the Manager's relist, a probe result, an image
// import) and on a timer (back-offs, periodic resync). Every step emits
// the Kubernetes event for it: Pulling, Pulled, Created, Started, Killing,
// BackOff, Failed, FailedCreatePodSandbox.
//
// Housekeeping removes what pods no longer on the node left behind:
// sandboxes (with CNI DEL), containers, network namespaces and pod
// directories — also after a kubelet crash or restart.
package pod
