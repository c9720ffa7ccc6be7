// Command proxy runs on every node: it programs the Service datapath
// (nftables), routes pods to other nodes' pod CIDRs and serves cluster DNS
// for the node's pods. `proxy --cleanup` removes all of it.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/proxy"
)

func main() {
	var f proxy.Flags
	var cf component.ClientFlags
	var logs component.LogFlags
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	cf.Register(fs)
	logs.Register(fs)
	f.Register(fs)
	_ = fs.Parse(os.Args[1:])

	component.Main("proxy", func(ctx context.Context) error {
		log, err := logs.Logger("proxy")
		if err != nil {
			return err
		}
		if f.Cleanup {
			return proxy.Cleanup("", 0, log)
		}
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		c, err := cf.Client("proxy")
		if err != nil {
			return err
		}
		defer c.Close()
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Client, cfg.Registry, cfg.Logger = c, reg, log
		return proxy.Run(ctx, cfg)
	})
}
