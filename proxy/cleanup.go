package proxy

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tugboat/tugboat/proxy/dns"
	"github.com/tugboat/tugboat/proxy/netpol"
	"github.com/tugboat/tugboat/proxy/nftables"
	"github.com/tugboat/tugboat/proxy/routes"
)

// Cleanup removes everything a proxy installs in the network namespace
// nsFd (0: the process's own): its nftables tables (the datapath's, table "" being the
// default, and the network policy agent's), the routes to other nodes' pod CIDRs and the cluster DNS
// address on lo. It is what `proxy --cleanup` runs; a proxy must not be
// running. It carries on past failures and returns them all.
func Cleanup(table string, nsFd int, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if table == "" {
		table = nftables.DefaultTable
	}
	var errs []error
	removed, err := nftables.Cleanup(table, nsFd)
	if err != nil {
		errs = append(errs, fmt.Errorf("nftables table %s: %w", table, err))
	} else if removed {
		log.Info("removed nftables table", "table", "ip "+table)
	}
	if removed, err := netpol.Cleanup(policyTable(table), nsFd); err != nil {
		errs = append(errs, fmt.Errorf("nftables table %s: %w", policyTable(table), err))
	} else if removed {
		log.Info("removed nftables table", "table", "ip "+policyTable(table))
	}
	n, err := routes.Cleanup(nsFd)
	if err != nil {
		errs = append(errs, fmt.Errorf("routes: %w", err))
	}
	if n > 0 {
		log.Info("removed pod CIDR routes", "routes", n, "protocol", int(routes.RouteProtocol))
	}
	addrs, err := dns.RemoveAddresses(nsFd)
	if err != nil {
		errs = append(errs, fmt.Errorf("cluster DNS address: %w", err))
	}
	for _, a := range addrs {
		log.Info("removed cluster DNS address", "address", a, "link", "lo")
	}
	return errors.Join(errs...)
}
