package apiserver

import (
	"crypto/tls"
	"fmt"
	"github.com/tugboat/tugboat/apiserver/flowcontrol"
	"github.com/tugboat/tugboat/apiserver/podsecurity"
	"github.com/tugboat/tugboat/apiserver/storage"
	"log/slog"
	"net"
	"time"
)

// Config is the apiserver's configuration. The zero value plus Listen is
// usable: embedded etcd in DataDir, defaults for everything else.
type Config struct {
	// Listen is the gRPC address ("127.0.0.1:6443"; port 0 picks a free one).
	Listen string
	// MetricsListen is the HTTP address for /metrics and /healthz ("" disables).
	MetricsListen string
	// KubeListen is the address of the Kubernetes HTTP API (kubectl,
	// client-go), HTTPS with the same TLS as Listen ("127.0.0.1:6444"; ""
	// disables; port 0 picks a free one).
	KubeListen string
	// EtcdServers are external etcd client URLs; empty starts an embedded etcd.
	EtcdServers []string
	// EtcdTLS is the client TLS of the external etcd (its CA and the
	// apiserver's client certificate, EtcdClientTLS); nil dials plaintext.
	EtcdTLS *tls.Config
	// DataDir is where the embedded etcd keeps its data; its only listener
	// is the unix socket DataDir/etcd.sock (mode 0600, DataDir 0700).
	DataDir string
	// TLS, when set, makes the gRPC listener speak TLS (the security issue
	// fills it with the cluster CA and client-certificate verification).
	TLS *tls.Config
	// BookmarkInterval is how often idle watchers get a BOOKMARK (default 10s).
	BookmarkInterval time.Duration
	// CompactionInterval is how often etcd history older than one interval
	// is compacted (default 5m; negative disables).
	CompactionInterval time.Duration
	// WatchCacheSize is how many recent events each kind's cache keeps.
	WatchCacheSize int
	// WatchQueueSize is how many events a watcher may lag before it is cut off.
	WatchQueueSize int
	// WatchQueueBytes caps the stored size of the events a watcher has
	// queued (default 16 MiB): a slow watcher is cut off before it pins more.
	WatchQueueBytes int64
	// MaxWatchesPerConnection and MaxWatchesPerUser cap open watches
	// (defaults DefaultMaxWatchesPerConnection, DefaultMaxWatchesPerUser;
	// negative: no limit); beyond them a watch is ResourceExhausted.
	MaxWatchesPerConnection int
	MaxWatchesPerUser       int
	// Auth, when set, turns on authentication, authorization and audit.
	Auth *AuthConfig
	// ServiceAccounts, when set, makes and verifies service account tokens
	// (the serviceaccounts/token subresource; the authenticator when Auth
	// is set too).
	ServiceAccounts *ServiceAccountConfig
	// Encryption, when set, encrypts Secrets at rest (storage.LoadEncryption).
	Encryption *storage.Encryption
	// EventTTL is how long an Event lives after its last update (default 1h).
	EventTTL time.Duration
	// ServiceCIDR is where ClusterIPs come from (default 10.96.0.0/16).
	ServiceCIDR string
	// NodePortRange is "LOW-HIGH" (default 30000-32767).
	NodePortRange string
	// EvictionChecks run, in order, after the PodDisruptionBudget check,
	// before an eviction deletes a running pod; any may refuse it (see
	// EvictionCheck).
	EvictionChecks []EvictionCheck
	// MaxConnections caps the client connections open at once over all
	// listeners (default 10000); it is lowered to what the file limit
	// allows, which is raised to its hard limit at start.
	MaxConnections int
	// MaxConnectionsPerHost caps those from one source IP (default 1000,
	// at most half of MaxConnections).
	MaxConnectionsPerHost int
	// MaxRequestsInflight is API Priority and Fairness's total of seats:
	// unary requests executing at once over all priority levels, each
	// level its share (flowcontrol; default 600, kube-apiserver's
	// --max-requests-inflight plus --max-mutating-requests-inflight); a
	// request waits in its level's queue for a seat up to 15 s. Negative
	// turns it off.
	MaxRequestsInflight int
	// HandshakeTimeout closes a connection that has not finished its TLS
	// handshake (and HTTP/2 preface) this long after accept (default 5s).
	HandshakeTimeout time.Duration
	// PodSecurity is the Pod Security admission's cluster default and
	// exemptions (namespace labels choose per namespace).
	PodSecurity PodSecurityConfig
	Logger      *slog.Logger
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Listen == "" {
		return fmt.Errorf("--listen: required")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: %v", c.Listen, err)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v", c.MetricsListen, err)
		}
	}
	if c.KubeListen != "" {
		if _, _, err := net.SplitHostPort(c.KubeListen); err != nil {
			return fmt.Errorf("--kube-listen %q: %v", c.KubeListen, err)
		}
	}
	if len(c.EtcdServers) == 0 && c.DataDir == "" {
		return fmt.Errorf("--data-dir: required for the embedded etcd (or give --etcd-servers)")
	}
	if c.WatchCacheSize < 0 || c.WatchQueueSize < 0 || c.WatchQueueBytes < 0 {
		return fmt.Errorf("--watch-cache-size, --watch-queue-size and --watch-queue-bytes must be >= 0")
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("--max-connections %d: must be > 0", c.MaxConnections)
	}
	if c.MaxConnectionsPerHost < 0 {
		return fmt.Errorf("--max-connections-per-host %d: must be > 0", c.MaxConnectionsPerHost)
	}
	if _, err := podsecurity.ParseDefaults(c.PodSecurity.Defaults); err != nil {
		return fmt.Errorf("--pod-security %q: %v", c.PodSecurity.Defaults, err)
	}
	if sa := c.ServiceAccounts; sa != nil {
		if sa.SigningKey == nil && len(sa.VerifyKeys) == 0 {
			return fmt.Errorf("--service-account-signing-key-file or --service-account-key-file: a key is required")
		}
		if sa.MaxTokenExpiration < 0 || sa.MaxTokenExpiration > 0 && sa.MaxTokenExpiration < 10*time.Minute {
			return fmt.Errorf("--service-account-max-token-expiration %s: must be at least 10m (0: no limit)", sa.MaxTokenExpiration)
		}
	}
	if c.HandshakeTimeout < 0 {
		return fmt.Errorf("--tls-handshake-timeout %s: must be > 0", c.HandshakeTimeout)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = 10 * time.Second
	}
	if c.CompactionInterval == 0 {
		c.CompactionInterval = 5 * time.Minute
	}
	if c.MaxWatchesPerConnection == 0 {
		c.MaxWatchesPerConnection = DefaultMaxWatchesPerConnection
	}
	if c.MaxWatchesPerUser == 0 {
		c.MaxWatchesPerUser = DefaultMaxWatchesPerUser
	}
	if c.EventTTL == 0 {
		c.EventTTL = time.Hour
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.NodePortRange == "" {
		c.NodePortRange = "30000-32767"
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 10000
	}
	if c.MaxConnectionsPerHost == 0 {
		c.MaxConnectionsPerHost = 1000
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.MaxRequestsInflight == 0 {
		c.MaxRequestsInflight = flowcontrol.DefaultTotalSeats
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
