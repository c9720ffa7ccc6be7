// Package compose tests the docker-compose cluster end to end, as CI runs
// it: `make up` (hack/up.sh: build every image on this host with no
// registry or base image, start docker-compose.yaml, wait for two Ready
// nodes, write a tugctl config), the quick-start workload through the
// NodePort published on the host, `tugctl logs`, a pod pulling from the
// cluster's registry, a node container stopped and its pods replaced on
// the other, then `make down` leaving no container, network, volume or
// test image behind. Failures that `make up` must explain (compose
// missing, a port taken) are checked too.
//
// Every run is its own compose project with its own image tag and free
// host ports, so it neither touches nor minds a `make up` cluster of the
// user's. The tests skip with a message when docker or compose is missing,
// except under CI=true, where that fails them.
package compose
