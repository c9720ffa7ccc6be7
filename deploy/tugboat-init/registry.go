package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// registryConfig is what `tugboat-init registry` needs.
type registryConfig struct {
	// Config is the distribution registry's config file.
	Config string
	// Addr is where the registry listens, as this container reaches it.
	Addr string
	// Images holds the archives (*.tar) to push once the registry answers.
	Images string
}

func (c registryConfig) Validate() error {
	switch {
	case c.Config == "":
		return fmt.Errorf("--config: required")
	case c.Addr == "":
		return fmt.Errorf("--addr: required")
	}
	return nil
}

// runRegistry runs `registry serve CONFIG` under the supervisor and, once
// it answers, pushes the bundled image archives into it, so a fresh
// compose cluster's registry already holds the example images. Pushing is
// idempotent (blobs that exist are skipped, the tag is rewritten).
func runRegistry(ctx context.Context, args []string) error {
	var c registryConfig
	fl := flag.NewFlagSet("tugboat-init registry", flag.ContinueOnError)
	fl.StringVar(&c.Config, "config", "/etc/distribution/config.yml", "the registry's config file")
	fl.StringVar(&c.Addr, "addr", "127.0.0.1:5000", "the registry's address from inside the container")
	fl.StringVar(&c.Images, "images", "/usr/share/tugboat/images", "image archives to push")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "tugboat-init")
	base := "http://" + c.Addr
	return (&supervisor{log: log}).Run(ctx, []process{{
		Name: "registry",
		Path: "registry",
		Args: []string{"serve", c.Config},
		Ready: func(ctx context.Context) error {
			if err := waitHTTP(ctx, base+"/v2/"); err != nil {
				return err
			}
			return pushAll(ctx, log, &pusher{base: base}, c.Images)
		},
	}})
}

// pushAll pushes every *.tar in dir.
func pushAll(ctx context.Context, log *slog.Logger, p *pusher, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		refs, err := p.pushArchive(ctx, f)
		if err != nil {
			return err
		}
		log.Info("pushed bundled image", "archive", filepath.Base(f), "images", refs)
	}
	return nil
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, url string) error {
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = probe(pctx, url)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", url, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
