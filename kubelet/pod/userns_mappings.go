package pod

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// The node IDs the kubelet hands out for user namespaces, as Kubernetes'
// getKubeletMappings and MakeUserNsManager decide them: the subordinate
// IDs of the system user "kubelet" when there is one, else node IDs from
// 65536 up to 2³² (the first 65536 are the node's own users').
//
// Kubernetes asks getsubids (shadow-utils) for the user's ranges; Tugboat
// reads the files getsubids reads by default, /etc/subuid and /etc/subgid
// (lines "user-or-uid:first:count"). As in Kubernetes, the user must have
// exactly one range, the same for user and group IDs; its first ID and
// its length must be multiples of 65536, the first at least 65536, and it
// must hold a block of 65536 IDs for every pod the node may run. Any of
// these wrong stops the kubelet with Kubernetes' message.

// kubeletUser is the system user whose subordinate IDs the kubelet uses.
const kubeletUser = "kubelet"

// The default range when there is no kubelet user (Kubernetes'
// defaultFirstID and defaultLen).
const (
	defaultUsernsFirstID = 1 << 16
	defaultUsernsLength  = 1<<32 - defaultUsernsFirstID
)

// subIDFiles are the files the ranges are read from.
type subIDFiles struct {
	subuid, subgid string
	// lookup finds a system user (user.Lookup).
	lookup func(name string) (*user.User, error)
}

var systemSubIDFiles = subIDFiles{subuid: "/etc/subuid", subgid: "/etc/subgid", lookup: user.Lookup}

// usernsRange returns the first node ID and the number of blocks of
// usernsLength IDs the kubelet may give pods, for a node of maxPods pods.
func (f subIDFiles) usernsRange(maxPods int) (first uint32, blocks uint32, err error) {
	first, length, err := f.kubeletMappings()
	if err != nil {
		return 0, 0, err
	}
	switch {
	case first%usernsLength != 0:
		return 0, 0, fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", first, usernsLength)
	case first < usernsLength:
		return 0, 0, fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", first, usernsLength)
	case length%usernsLength != 0:
		return 0, 0, fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", length, usernsLength)
	case int64(length/usernsLength) < int64(maxPods):
		return 0, 0, fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", maxPods)
	}
	return first, length / usernsLength, nil
}

// kubeletMappings is Kubernetes' getKubeletMappings, reading the files.
func (f subIDFiles) kubeletMappings() (first, length uint32, err error) {
	u, err := f.lookup(kubeletUser)
	if err != nil {
		// No such user; or, in a static build (Go's own user lookup), no
		// /etc/passwd at all, as in a FROM scratch node image.
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) || errors.Is(err, fs.ErrNotExist) {
			return defaultUsernsFirstID, defaultUsernsLength, nil
		}
		return 0, 0, err
	}
	uids, err := subIDRanges(f.subuid, u)
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional ids for user %q: %w", kubeletUser, err)
	}
	gids, err := subIDRanges(f.subgid, u)
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional gids for user %q: %w", kubeletUser, err)
	}
	if len(uids) != 1 || len(gids) != 1 {
		return 0, 0, fmt.Errorf("user %q must have exactly one range of subordinate IDs in %s and in %s (has %d and %d)", kubeletUser, f.subuid, f.subgid, len(uids), len(gids))
	}
	if uids[0] != gids[0] {
		return 0, 0, fmt.Errorf("mismatched subuids and subgids for user %q", kubeletUser)
	}
	return uids[0][0], uids[0][1], nil
}

// subIDRanges reads the ranges (first, count) file gives user u, named by
// its name or its UID.
func subIDRanges(file string, u *user.User) ([][2]uint32, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out [][2]uint32
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s line %d: %q is not owner:first:count", file, n, line)
		}
		if parts[0] != u.Username && parts[0] != u.Uid {
			continue
		}
		first, err1 := strconv.ParseUint(parts[1], 10, 32)
		count, err2 := strconv.ParseUint(parts[2], 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		out = append(out, [2]uint32{uint32(first), uint32(count)})
	}
	return out, sc.Err()
}
