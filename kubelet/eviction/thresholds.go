package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/resource"
)

// Signals the thresholds watch.
const (
	// MemoryAvailable is the node's available memory (MemAvailable of
	// /proc/meminfo).
	MemoryAvailable = "memory.available"
	// NodeFSAvailable is the free space of the kubelet's root dir's file
	// system: pod directories, emptyDir volumes and container logs.
	NodeFSAvailable = "nodefs.available"
	// ImageFSAvailable is the free space of the container runtime's image
	// store (--image-fs-dir).
	ImageFSAvailable = "imagefs.available"
)

// DefaultEvictionHard are Kubernetes' default hard eviction thresholds.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%"

// Threshold is one hard eviction threshold: the signal is crossed when
// less than Quantity bytes, or less than Percent of the capacity, is
// available.
type Threshold struct {
	Signal   string
	Quantity int64   // bytes; 0 when Percent is used
	Percent  float64 // 0-100
}

// String is the threshold in --eviction-hard syntax.
func (t Threshold) String() string {
	return t.Signal + "<" + t.limitString()
}

func (t Threshold) limitString() string {
	if t.Percent > 0 {
		return strconv.FormatFloat(t.Percent, 'f', -1, 64) + "%"
	}
	return resource.New(t.Quantity).BytesString()
}

// limit is the threshold in bytes for a capacity.
func (t Threshold) limit(capacity int64) int64 {
	if t.Percent > 0 {
		return int64(float64(capacity) * t.Percent / 100)
	}
	return t.Quantity
}

// ParseThresholds parses --eviction-hard: comma-separated SIGNAL<VALUE,
// VALUE a quantity (100Mi) or a percentage (10%). Empty: none.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		sig, val, ok := strings.Cut(part, "<")
		sig, val = strings.TrimSpace(sig), strings.TrimSpace(val)
		if !ok || val == "" {
			return nil, fmt.Errorf("--eviction-hard %q: want SIGNAL<VALUE such as memory.available<100Mi or nodefs.available<10%%", part)
		}
		switch sig {
		case MemoryAvailable, NodeFSAvailable, ImageFSAvailable:
		default:
			return nil, fmt.Errorf("--eviction-hard %q: unknown signal %q (want %s, %s or %s)", part, sig, MemoryAvailable, NodeFSAvailable, ImageFSAvailable)
		}
		if seen[sig] {
			return nil, fmt.Errorf("--eviction-hard: %s given twice", sig)
		}
		seen[sig] = true
		t := Threshold{Signal: sig}
		if p, isPct := strings.CutSuffix(val, "%"); isPct {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f <= 0 || f > 100 {
				return nil, fmt.Errorf("--eviction-hard %q: percentage %q must be in (0, 100]", part, val)
			}
			t.Percent = f
		} else {
			q, err := resource.Parse(val)
			if err != nil || q.Value() <= 0 {
				return nil, fmt.Errorf("--eviction-hard %q: want a positive quantity such as 100Mi or a percentage", part)
			}
			t.Quantity = q.Value()
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Signal < out[j].Signal })
	return out, nil
}

// Observation is one signal's reading.
type Observation struct {
	Available, Capacity int64
	// Path is the file system's path (disk signals).
	Path string
}

// crossed is a threshold that the observations cross, with the reading.
type crossed struct {
	Threshold
	obs Observation
}

// message is the eviction and condition message, as the kubelet's: "The
// node was low on resource: memory. Threshold quantity: 100Mi, available:
// 50Mi."
func (c crossed) message() string {
	res := strings.TrimSuffix(c.Signal, ".available")
	if res != "memory" {
		res = "ephemeral-storage (" + res + ")"
	}
	return fmt.Sprintf("The node was low on resource: %s. Threshold quantity: %s, available: %s.",
		res, c.limitString(), memString(c.obs.Available))
}

func memString(b int64) string {
	switch {
	case b >= 1<<30:
		return strings.TrimSuffix(strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64), ".0") + "Gi"
	case b >= 1<<20:
		return strconv.FormatInt(b>>20, 10) + "Mi"
	case b >= 1<<10:
		return strconv.FormatInt(b>>10, 10) + "Ki"
	}
	return strconv.FormatInt(b, 10)
}

// evaluate returns the thresholds crossed by obs (signals without a
// reading are not crossed).
func evaluate(ts []Threshold, obs map[string]Observation) []crossed {
	var out []crossed
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok || o.Capacity <= 0 {
			continue
		}
		if o.Available < t.limit(o.Capacity) {
			out = append(out, crossed{t, o})
		}
	}
	return out
}
