package apiserver

import (
	"context"
	"sync"

	"google.golang.org/grpc/peer"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// Per-client watch limits: every watch is a goroutine, a queue and a
// stream's buffers (tens of KB), so a client holding thousands of them
// holds the apiserver's memory. A watch beyond MaxWatchesPerConnection on
// one connection, or beyond MaxWatchesPerUser for one user across all its
// connections, is refused with ResourceExhausted (apierrors.ErrLimitExceeded;
// HTTP 429); what a watch may pin of the watch cache is bounded by
// Config.WatchQueueBytes.

// Defaults of the limits: far above what a component opens (an informer a
// kind: the controller-manager's garbage collector watches every kind),
// far below what hurts.
const (
	DefaultMaxWatchesPerConnection = 250
	DefaultMaxWatchesPerUser       = 1000
)

type watchLimits struct {
	perConn, perUser int
	mu               sync.Mutex
	conns            map[string]int
	users            map[string]int
}

func newWatchLimits(perConn, perUser int) *watchLimits {
	return &watchLimits{perConn: perConn, perUser: perUser, conns: map[string]int{}, users: map[string]int{}}
}

// acquire counts a new watch of ctx's connection and user, or refuses it;
// release undoes it when the watch ends.
func (l *watchLimits) acquire(ctx context.Context) (release func(), err error) {
	conn := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		conn = p.Addr.Network() + ":" + p.Addr.String()
		if p.LocalAddr != nil {
			conn += ">" + p.LocalAddr.String()
		}
	}
	user := ""
	if u := auth.UserFrom(ctx); u != nil {
		user = u.Name
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if conn != "" && l.perConn > 0 && l.conns[conn] >= l.perConn {
		return nil, apierrors.New(apierrors.ErrLimitExceeded, "too many watches on this connection: %d open, the limit is %d (--max-watches-per-connection)", l.conns[conn], l.perConn)
	}
	if user != "" && l.perUser > 0 && l.users[user] >= l.perUser {
		return nil, apierrors.New(apierrors.ErrLimitExceeded, "too many watches for user %q: %d open, the limit is %d (--max-watches-per-user)", user, l.users[user], l.perUser)
	}
	l.conns[conn]++
	l.users[user]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.conns[conn]--; l.conns[conn] <= 0 {
			delete(l.conns, conn)
		}
		if l.users[user]--; l.users[user] <= 0 {
			delete(l.users, user)
		}
	}, nil
}
