// Package console tests `tugctl console` in a real headless Chromium
// (Debian's chromium, driven from Go with chromedp) against a real
// cluster: the e2e test cluster (e2e/cluster: network-namespace hosts,
// per-node containerd with its CRI plugin, the real apiserver, scheduler,
// controller-manager and kubelets), with the console run as the tugctl
// binary a user runs.
//
// What the tests drive is what a person does: apply a Deployment with
// tugctl and watch its chips appear on their nodes and turn Running, click
// a chip and read its creation flow (every stage lit in order, with
// times; an unschedulable pod stopped at the scheduler with "0/N nodes
// are available"; a missing image stopped at the runtime with the import
// hint), open a Service and watch an endpoint's readiness flip, open the
// console as a view-only user (Secrets forbidden), and serve beyond
// loopback (the page asks for the token). Every wait is on a condition of
// the page's DOM with a generous deadline, polled, never a sleep: the
// machine may be loaded (load average 20 and more). Each test saves
// screenshots (PNG) in its t.ArtifactDir() (kept with go test -artifacts).
//
// BenchmarkClusterView5000Pods measures, in the browser, how long the
// cluster view takes to draw 5,000 pods on 50 nodes (Node and Pod objects
// made through the API of an in-process apiserver; no kubelets) and how
// long one batch of 1,000 changed pods takes to redraw.
//
// Chromium missing: the tests skip with the install hint (fail under
// CI=true). Run them as root under the host lock:
//
//	flock /tmp/tugboat-host.lock go test ./e2e/console
//	go test ./e2e/console -run '^$' -bench ClusterView5000Pods -benchtime 3x
package console
