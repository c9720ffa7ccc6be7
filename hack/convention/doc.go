// Package convention checks, as tests, the rules that keep Tugboat's parts
// apart (shared/ARCHITECTURE.md: components meet only through the API), so
// they stay true as code moves, as Tailscale's dependency tests do:
//
//   - deps_test.go: `go list -deps` of every binary under cmd/ and deploy/
//     shows only packages of the folders it may link: a component binary
//     its own folder, api/ and internal/, tugctl its own cmd/tugctl tree,
//     api/ and internal/, the all-in-one cmd/tugboat every component.
//     kubelet ↛ proxy, tugctl ↛ apiserver, scheduler ↛ controllers, no
//     binary ↛ e2e/ or hack/; internal/ imports nothing else of the module.
//   - etcd_test.go: only apiserver/storage, the apiserver's etcd start-up
//     (etcd.go, server.go), its test server and the etcd image's main
//     import an etcd package.
//
// The package has no code of its own; it reads the module with `go list`
// and go/parser, and touches nothing.
package convention
