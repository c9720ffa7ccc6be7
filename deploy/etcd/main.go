// Command etcd is the etcd server of Tugboat's docker-compose cluster: the
// upstream etcd main (go.etcd.io/etcd/server/v3/etcdmain), built from the
// same etcd module the apiserver embeds, so the compose image needs no
// download beyond the project's own go.mod and no base image. It takes
// etcd's usual flags.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
