// Command tugctl is the Tugboat command line: apply, get, describe, delete,
// scale, rollout, logs, exec, image, token, auth and config, shaped like
// kubectl. The commands live in
// internal/tugctl; this main only wires the process to them.
package main

import (
	"os"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/tugctl"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func main() {
	ctx, cancel := component.SignalContext()
	code := tugctl.Run(ctx, tugctl.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:], version)
	cancel()
	os.Exit(code)
}
