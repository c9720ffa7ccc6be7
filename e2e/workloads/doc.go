// Package workloads holds the end-to-end tests of the workload kinds on a
// three-node test cluster (e2e/cluster: network-namespace hosts, real
// containerd, CNI, kubelets, apiserver with embedded etcd, scheduler and
// controller-manager) driven as a user would, with Kubernetes' YAML and
// the tugctl binary: Jobs to Complete and to BackoffLimitExceeded, an
// Indexed Job, a CronJob firing, DaemonSets following nodes and taints and
// rolling one node at a time, a StatefulSet's ordered start, stable names
// and claims that outlive pods, an HPA scaling a CPU-burning Deployment
// up and down, and `tugctl drain` under a PodDisruptionBudget.
package workloads
