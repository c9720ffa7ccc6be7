package apiserver

import (
	"fmt"
	"log/slog"
	"syscall"

	"github.com/tugboat/tugboat/apiserver/connlimit"
)

// fdReserve are the file descriptors kept back from client connections for
// everything else the process opens: the embedded etcd (WAL, database,
// snapshots, and the 150 its own listener keeps back), the etcd client,
// the listeners, the audit log.
const fdReserve = 256

// minConnections is the fewest client connections worth serving with: a
// file limit that leaves fewer is a setup error, said at start.
const minConnections = 64

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit, as far
// as it goes, and returns the limits in force and the soft limit before.
func raiseFileLimit() (soft, hard, before uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, 0, fmt.Errorf("reading the file limit: %w", err)
	}
	before = r.Cur
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return before, r.Max, before, fmt.Errorf("raising the soft file limit from %d to %d: %w", before, r.Max, err)
		}
	}
	return r.Cur, r.Max, before, nil
}

// connectionLimits raises the file limit, fits the configured connection
// caps into it (at most soft limit - fdReserve connections in all, at most
// half of those from one host, so one source can never take every slot)
// and logs what is in force.
func connectionLimits(cfg Config, log *slog.Logger) (connlimit.Config, error) {
	soft, hard, before, err := raiseFileLimit()
	if err != nil {
		return connlimit.Config{}, err
	}
	budget := 0
	if soft > fdReserve {
		budget = int(min(soft-fdReserve, 1<<30))
	}
	if budget < minConnections {
		return connlimit.Config{}, fmt.Errorf("the file limit (RLIMIT_NOFILE soft %d, hard %d) leaves fewer than %d client connections after the %d the apiserver keeps for etcd and itself: raise it (ulimit -n, LimitNOFILE= in the systemd unit)", soft, hard, minConnections, fdReserve)
	}
	c := connlimit.Config{MaxConns: cfg.MaxConnections, MaxConnsPerHost: cfg.MaxConnectionsPerHost, HandshakeTimeout: cfg.HandshakeTimeout}
	if c.MaxConns > budget {
		log.Warn("--max-connections is more than the file limit allows: lowered", "asked", c.MaxConns, "maxConnections", budget, "fileLimit", soft)
		c.MaxConns = budget
	}
	if c.MaxConnsPerHost > c.MaxConns/2 {
		c.MaxConnsPerHost = max(c.MaxConns/2, 1)
	}
	log.Info("file limit and connection limits", "fileLimitSoft", soft, "fileLimitHard", hard, "fileLimitBefore", before,
		"maxConnections", c.MaxConns, "maxConnectionsPerHost", c.MaxConnsPerHost, "handshakeTimeout", c.HandshakeTimeout)
	return c, nil
}
