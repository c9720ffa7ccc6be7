// Command tugctl is the Tugboat command line: apply, get, describe, delete,
// scale, rollout, logs, exec, image, token, auth and config, shaped like
// kubectl. internal/tugctl builds the command tree from the command groups
// under internal/cmd (see its package doc for the layout); this main only
// wires the process to it.
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
