package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The watch probe measures watch delivery lag on the pods' own path (their
// etcd watch, watch cache and fan-out, busy with the load's pods): during
// the load the bench rewrites an annotation of one pod of its own every
// probeEvery and times when its own watch of that pod sees each write.
//
// The clock is the bench's: each write is timed when its request is sent
// and when its reply comes back. etcd commits the write between the two,
// so the lag from the commit lies between the lag from the reply (a lower
// bound; negative when the watch was first) and the lag from the request
// (an upper bound, which includes the write's own latency). Both are
// reported. Each acknowledged write's resource version (etcd's revision)
// also gives etcd's write rate over the load.
const (
	probeName       = "density-watch-probe"
	probeLabel      = "density-probe"
	probeAnnotation = "density.tugboat.dev/probe-seq"
	probeEvery      = 200 * time.Millisecond
)

type watchProbe struct {
	pods *client.Typed[*v1.Pod]
	mu   sync.Mutex
	// by sequence number
	sent, acked, seen map[int]time.Time
	revs              []sample // each acknowledged write's etcd revision
	writeErrs         int
}

func newWatchProbe(c *client.Client) *watchProbe {
	return &watchProbe{pods: client.For[*v1.Pod](c), sent: map[int]time.Time{}, acked: map[int]time.Time{}, seen: map[int]time.Time{}}
}

// probePod is a pod no scheduler places (its schedulerName is its own), so
// only the bench writes it.
func probePod() *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: probeName, Namespace: "default", Labels: map[string]string{probeLabel: "true"}},
		Spec:     &v1.PodSpec{SchedulerName: probeName, Containers: []*v1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "3600"}}}},
	}
}

// run writes the probe every probeEvery and watches it until ctx ends;
// then it deletes the probe.
func (p *watchProbe) run(ctx context.Context) error {
	cur, err := p.pods.Create(ctx, probePod())
	if err != nil {
		return fmt.Errorf("watch probe: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		_, _ = p.pods.Delete(dctx, "default", probeName, client.DeleteOptions{GracePeriodSeconds: &zero})
	}()
	w, err := p.pods.Watch(ctx, client.WatchOptions{Namespace: "default", LabelSelector: probeLabel, ResourceVersion: cur.GetMetadata().GetResourceVersion()})
	if err != nil {
		return fmt.Errorf("watch probe: %w", err)
	}
	defer w.Stop()
	watched := make(chan error, 1)
	go func() { watched <- p.watch(w) }()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for seq := 1; ; seq++ {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watched:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch probe: the watch ended: %w", err)
		case <-t.C:
		}
		next := proto.Clone(cur).(*v1.Pod)
		if next.Metadata.Annotations == nil {
			next.Metadata.Annotations = map[string]string{}
		}
		next.Metadata.Annotations[probeAnnotation] = strconv.Itoa(seq)
		sent := time.Now()
		out, err := p.pods.Update(ctx, next)
		acked := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.mu.Lock()
			p.writeErrs++
			p.mu.Unlock()
			if errors.Is(err, apierrors.ErrConflict) {
				if c, gerr := p.pods.Get(ctx, "default", probeName); gerr == nil {
					cur = c
				}
			}
			continue
		}
		cur = out
		p.mu.Lock()
		p.sent[seq], p.acked[seq] = sent, acked
		p.revs = append(p.revs, sample{at: acked, v: float64(out.GetMetadata().GetResourceVersion())})
		p.mu.Unlock()
	}
}

func (p *watchProbe) watch(w *client.Watcher[*v1.Pod]) error {
	for {
		ev, err := w.Next()
		if err != nil {
			return err
		}
		if ev.Type != "MODIFIED" {
			continue
		}
		seen := time.Now()
		seq, err := strconv.Atoi(ev.Object.GetMetadata().GetAnnotations()[probeAnnotation])
		if err != nil {
			continue
		}
		p.mu.Lock()
		if _, ok := p.seen[seq]; !ok {
			p.seen[seq] = seen
		}
		p.mu.Unlock()
	}
}

// watchLag is what the probe measured.
type watchLag struct {
	fromReply, fromRequest []time.Duration // of the writes seen
	at                     []time.Duration // each seen write's request, from start
	writes, unseen, errs   int
	revs                   []sample
}

func (p *watchProbe) result(start time.Time) watchLag {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := watchLag{writes: len(p.sent), errs: p.writeErrs, revs: append([]sample(nil), p.revs...)}
	seqs := slices.Sorted(maps.Keys(p.sent))
	for _, seq := range seqs {
		sent := p.sent[seq]
		seen, ok := p.seen[seq]
		if !ok {
			l.unseen++
			continue
		}
		l.fromRequest = append(l.fromRequest, seen.Sub(sent))
		l.fromReply = append(l.fromReply, seen.Sub(p.acked[seq]))
		l.at = append(l.at, sent.Sub(start))
	}
	return l
}

// writeRate is etcd's revisions per second from first to last acknowledged
// probe write, and the highest over any window of at least 5 s.
func writeRate(revs []sample) (mean, peak float64) {
	if len(revs) < 2 {
		return 0, 0
	}
	first, last := revs[0], revs[len(revs)-1]
	if d := last.at.Sub(first.at).Seconds(); d > 0 {
		mean = (last.v - first.v) / d
	}
	j := 0
	for i := range revs {
		for j < i && revs[i].at.Sub(revs[j+1].at) >= 5*time.Second {
			j++
		}
		if d := revs[i].at.Sub(revs[j].at).Seconds(); d >= 5 {
			peak = max(peak, (revs[i].v-revs[j].v)/d)
		}
	}
	return mean, peak
}
