package pod

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsernsRange: the kubelet's user namespace range as Kubernetes
// decides it: the default without a kubelet user; else the kubelet user's
// one subordinate range (by name or UID), the same for groups, checked
// with Kubernetes' messages.
func TestUsernsRange(t *testing.T) {
	kubelet := &user.User{Username: "kubelet", Uid: "998", Gid: "998"}
	for _, tc := range []struct {
		name           string
		user           *user.User // nil: no such user
		lookupErr      error
		subuid, subgid string // "" with a user: the file is missing
		maxPods        int
		wantFirst      uint32
		wantBlocks     uint32
		wantErr        string
	}{
		{name: "no kubelet user: the default", maxPods: 110, wantFirst: 65536, wantBlocks: 65535},
		{name: "the kubelet user's range", user: kubelet, maxPods: 110,
			subuid: "root:100000:65536\nkubelet:196608:8388608\n", subgid: "kubelet:196608:8388608\n", wantFirst: 196608, wantBlocks: 128},
		{name: "named by UID, comments skipped", user: kubelet, maxPods: 2,
			subuid: "# ranges\n998:131072:131072\n", subgid: "kubelet:131072:131072\n", wantFirst: 131072, wantBlocks: 2},
		{name: "not enough for the node's pods", user: kubelet, maxPods: 110,
			subuid: "kubelet:65536:655360\n", subgid: "kubelet:65536:655360\n", wantErr: "kubelet user assigned IDs are not enough to support 110 pods"},
		{name: "first ID not a multiple", user: kubelet, maxPods: 1,
			subuid: "kubelet:100000:65536\n", subgid: "kubelet:100000:65536\n", wantErr: "kubelet user assigned ID 100000 is not a multiple of 65536"},
		{name: "first ID in the node's own users", user: kubelet, maxPods: 1,
			subuid: "kubelet:0:131072\n", subgid: "kubelet:0:131072\n", wantErr: "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{name: "length not a multiple", user: kubelet, maxPods: 1,
			subuid: "kubelet:65536:70000\n", subgid: "kubelet:65536:70000\n", wantErr: "kubelet user assigned IDs length 70000 is not a multiple of 65536"},
		{name: "uids and gids differ", user: kubelet, maxPods: 1,
			subuid: "kubelet:65536:65536\n", subgid: "kubelet:131072:65536\n", wantErr: `mismatched subuids and subgids for user "kubelet"`},
		{name: "two ranges", user: kubelet, maxPods: 1,
			subuid: "kubelet:65536:65536\nkubelet:262144:65536\n", subgid: "kubelet:65536:65536\n", wantErr: `user "kubelet" must have exactly one range`},
		{name: "no range for the user", user: kubelet, maxPods: 1,
			subuid: "root:65536:65536\n", subgid: "root:65536:65536\n", wantErr: "(has 0 and 0)"},
		{name: "no subuid file", user: kubelet, maxPods: 1, subgid: "kubelet:65536:65536\n",
			wantErr: `error retrieving additional ids for user "kubelet"`},
		{name: "a line that does not parse", user: kubelet, maxPods: 1,
			subuid: "kubelet:65536\n", subgid: "kubelet:65536:65536\n", wantErr: `line 1: "kubelet:65536" is not owner:first:count`},
		{name: "the user database fails", lookupErr: errors.New("nss down"), maxPods: 1, wantErr: "nss down"},
		{name: "no /etc/passwd (a static build in a scratch image): the default", lookupErr: &fs.PathError{Op: "open", Path: "/etc/passwd", Err: fs.ErrNotExist},
			maxPods: 110, wantFirst: 65536, wantBlocks: 65535},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := subIDFiles{subuid: filepath.Join(dir, "subuid"), subgid: filepath.Join(dir, "subgid"),
				lookup: func(name string) (*user.User, error) {
					switch {
					case tc.lookupErr != nil:
						return nil, tc.lookupErr
					case tc.user == nil || name != tc.user.Username:
						return nil, user.UnknownUserError(name)
					}
					return tc.user, nil
				}}
			for path, content := range map[string]string{f.subuid: tc.subuid, f.subgid: tc.subgid} {
				if content != "" {
					if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			first, blocks, err := f.usernsRange(tc.maxPods)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || first != tc.wantFirst || blocks != tc.wantBlocks {
				t.Fatalf("range (%d, %d blocks), %v; want (%d, %d blocks)", first, blocks, err, tc.wantFirst, tc.wantBlocks)
			}
		})
	}
}

// TestUsernsAllocatorRange: blocks come from the configured range only,
// and its end is reported.
func TestUsernsAllocatorRange(t *testing.T) {
	a := &usernsAllocator{podsDir: t.TempDir(), first: 196608, blocks: 2}
	one, err := a.allocate("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	two, err := a.allocate("uid-2")
	if err != nil {
		t.Fatal(err)
	}
	if one.UIDs[0].HostID != 196608 || two.UIDs[0].HostID != 262144 {
		t.Errorf("mappings %+v and %+v, want the range's first two blocks", one.UIDs, two.UIDs)
	}
	if _, err := a.allocate("uid-3"); err == nil || !strings.Contains(err.Error(), "all 2 ranges of 65536 IDs are in use") {
		t.Errorf("a third pod: %v", err)
	}
}
