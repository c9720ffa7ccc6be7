// Package pod runs the pods bound to this node: for each, a worker that
// makes the runtime's sandbox and containers match the pod's spec, restarts
// and kills containers per restartPolicy and probes, stops and removes
// everything when the pod goes, and publishes the pod's status. It is the
// kubelet's pod logic, driven through the runtime.Runtime interface, so it
// is tested on a fake runtime and the containerd code stays thin.
//
// # Loop
//
// A Manager keeps one worker per pod (fed by the pod informer through
// UpdatePod and DeletePod), relists the node's containers every second to
// wake the workers of pods whose containers changed state, and does
// housekeeping every 30 s: it removes what pods no longer on the node left
// behind (sandboxes with CNI DEL, containers, network namespaces, pod
// directories — also after a kubelet crash or restart).
//
// A worker syncs when woken (spec change, deletion, a container that
// changed state, a probe result, an image import) and on a timer (a
// back-off's end, the resync). A sync is level-triggered and idempotent,
// and it decides, then does (swarmkit's agent/exec shape):
//
//  1. observe: the pod's sandboxes and containers from the runtime (by the
//     pod-UID labels the runtime puts on them, which is also how a
//     restarted kubelet adopts running containers without restarting
//     them), then the rest of a syncInput (observe.go): the worker's last
//     status, copies of the pod's back-offs and probe results, the pod
//     network's readiness, a requested eviction, the clock;
//  2. decide: decide(syncInput) is a plan (plan.go), a pure function and
//     table-tested: terminate (being deleted), keep terminal, fail (evicted,
//     past activeDeadlineSeconds), or run — which sandbox (the current one,
//     a new one, or why none: a back-off, the network not ready), which
//     stale sandboxes go, and a step per container (start a new attempt,
//     start one left created, kill — a failed liveness or startup probe, a
//     changed image —, wait in CrashLoopBackOff or PodInitializing, or
//     nothing), init containers one by one first — sidecars (init
//     containers with restartPolicy Always, sidecar.go) only to started,
//     and kept running;
//  3. do: a syncRun carries the plan out (sync.go, sandbox.go,
//     containers.go, stop.go): network namespace, sandbox record, CNI ADD
//     in the background and the /etc files, the pod's volumes prepared
//     meanwhile (in a goroutine of their own while the runtime makes a
//     new sandbox, as Kubernetes has them mounted before it; a volume
//     error is reported once the sandbox is made, and a sandbox that
//     fails cuts the preparation short and is reported alone, as if the
//     volumes came after it); image per pull policy (with
//     back-off and an import hint), env, volumes, cgroup limits, create,
//     start, the postStart hook, events; a kill runs the preStop hook
//     first (lifecycle.go); a kill's follow-up is decided after it, by the same
//     rule, on how the container exited. What doing runs into (an image to
//     import, a missing ConfigMap, a failed CNI ADD) becomes the
//     containers' and the sandbox's waiting reasons;
//     A resize of the spec's resources (pods/resize) is first admitted
//     against the node (the pod's allocation, kept by the Manager: what
//     containers are created with), then applied to the running
//     containers in place or by a restart per their resizePolicy
//     (resize.go);
//  4. report: the status from the refreshed state and those reasons
//     (podstatus.go, status.go: phase, conditions with the timeline ones,
//     IPs, container states, restart counts), published to the status
//     manager, which writes it to the API in the background, compare-and-
//     swap on the pod's UID and resource version.
//
// The syncInput, the plan and the syncRun are made fresh for each sync.
// The worker keeps only what must live across syncs (worker.go): the last
// status, when the pod was accepted, its pod IPs by sandbox, its prepared
// volumes, whether its network was released. The back-offs (crash, image
// pull, sandbox) live in the Manager, keyed by pod UID; the probe workers
// in the prober.
//
// # What it touches
//
// Through its interfaces only: the runtime (sandboxes, containers, images;
// its own found by the labels it sets and the pod UID), the pod
// network (Network: network namespaces under RootDir/netns, CNI ADD and
// DEL), the prober, the Recorder (events), the pods API (PodAPI: status
// writes and the final delete with grace 0, both guarded by UID and
// resource version) and Sources (reads of ConfigMaps, Secrets and
// Services). On disk, only RootDir/pods/<uid>: the /etc files, emptyDir,
// configMap and secret volumes, and the container logs the runtime
// writes; hostPath volumes are bind-mounted, never written. It never
// changes a pod's spec.
package pod
