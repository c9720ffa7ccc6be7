// Command mkimage writes one of Tugboat's test or example images as an OCI
// (and docker-loadable) tar archive, with no registry and no docker:
//
//	go run ./hack/mkimage -o busybox.tar busybox
//	go run ./hack/mkimage -o echo.tar echo
//	go run ./hack/mkimage -o pause.tar pause   (the CRI sandbox image)
//
// Import the result with `tugctl image import`, `ctr -n tugboat image
// import`, or `docker load`.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tugboat/tugboat/deploy/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	out := flag.String("o", "", "output file (required)")
	var opts images.BuildOptions
	flag.StringVar(&opts.BusyboxPath, "busybox", images.DefaultBusyboxPath, "static busybox binary")
	flag.StringVar(&opts.EchoBinary, "echo-binary", "", "prebuilt static echo server (default: build it)")
	flag.StringVar(&opts.PauseBinary, "pause-binary", "", "prebuilt static pause (default: build it)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: mkimage -o FILE.tar busybox|echo|pause\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		return fmt.Errorf("need -o and one image name")
	}
	name := flag.Arg(0)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := images.Build(ctx, name, w, opts); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", *out, images.Names[name])
	return nil
}
