package nftables

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// sockBuf is the netlink socket buffer (both ways) a batch needs: the
// full sync of thousands of Services (or policy chains) is one message of
// some MiB, and the kernel acknowledges each of its parts at once.
const sockBuf = 64 << 20

// Handle names one IPv4 table in a network namespace and opens netlink
// batches on it. It keeps no state. The Service datapath's table and the
// network policy agent's (proxy/netpol) both stand on it.
type Handle struct {
	Name  string
	NetNS int // fd of the network namespace; 0: the caller's
}

// Table is the table's nftables object.
func (h Handle) Table() *nftables.Table {
	return &nftables.Table{Name: h.Name, Family: nftables.TableFamilyIPv4}
}

// Conn opens a batch. Each Flush dials its own netlink socket (in the
// table's namespace) with buffers big enough for a full sync.
func (h Handle) Conn() (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(bigBuffers)}
	if h.NetNS != 0 {
		opts = append(opts, nftables.WithNetNSFd(h.NetNS))
	}
	return nftables.New(opts...)
}

// Exists reports whether the table is there.
func (h Handle) Exists() (bool, error) {
	c, err := h.Conn()
	if err != nil {
		return false, err
	}
	_, err = c.ListTableOfFamily(h.Name, nftables.TableFamilyIPv4)
	if errors.Is(err, syscall.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listing table ip %s: %w", h.Name, err)
	}
	return true, nil
}

// Remove deletes the table if it exists. It reports whether it did.
func (h Handle) Remove() (bool, error) {
	exists, err := h.Exists()
	if err != nil || !exists {
		return false, err
	}
	c, err := h.Conn()
	if err != nil {
		return false, err
	}
	c.DelTable(h.Table())
	if err := c.Flush(); err != nil {
		return false, fmt.Errorf("deleting table ip %s: %w", h.Name, err)
	}
	return true, nil
}

func bigBuffers(c *netlink.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sockBuf); e != nil {
			serr = fmt.Errorf("SO_SNDBUFFORCE: %w", e)
			return
		}
		if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sockBuf); e != nil {
			serr = fmt.Errorf("SO_RCVBUFFORCE: %w", e)
		}
	})
	return errors.Join(err, serr)
}
