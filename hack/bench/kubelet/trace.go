package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// With -trace the kubelet runs with --log-level debug --log-format json
// and logs each step of starting a pod (kubelet/pod/steplog.go: the
// step, the pod, how long it took). After each measured startAll the
// bench reads the records the kubelet wrote meanwhile and prints, over
// the pods, when each step began and ended (offsets from the first
// create) and how long it took, between the bench's own two ends: the
// create returning and the watch seeing the pod Running. It shows where
// a pod's time goes (the API, volumes, the runtime's sandbox, the image
// check, create and start, the status write) and, in a burst, which
// step the pods queue in.

// traceSteps are the kubelet's step records, in the order a pod goes
// through them.
var traceSteps = []string{
	"pod accepted", "volumes prepared", "sandbox made", "pod network ready",
	"image ready", "container created", "container started", "pod status written",
}

// podTimes is what the bench saw of one pod: when its create returned
// and when the watch showed it Running.
type podTimes struct {
	created, running time.Time
}

// stepRecord is one step of one pod: when it ended and how long it took.
type stepRecord struct {
	end  time.Time
	took time.Duration
}

// kubeletSteps reads the kubelet's step records from its JSON log from
// offset on: per pod (namespace/name), the first record of each step
// (for the status, the first write that shows every container running).
func kubeletSteps(path string, offset int64) (map[string]map[string]stepRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	steps := map[string]bool{}
	for _, s := range traceSteps {
		steps[s] = true
	}
	out := map[string]map[string]stepRecord{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Time    time.Time `json:"time"`
			Msg     string    `json:"msg"`
			Pod     string    `json:"pod"`
			Took    *float64  `json:"took"`
			Running *bool     `json:"running"`
		}
		// A step record has took ("pod accepted" none): the runtime's
		// own debug records of the same names ("container created" of
		// the CRI backend) have not.
		if json.Unmarshal(sc.Bytes(), &rec) != nil || !steps[rec.Msg] || rec.Pod == "" || (rec.Took == nil) != (rec.Msg == "pod accepted") {
			continue
		}
		if rec.Msg == "pod status written" && (rec.Running == nil || !*rec.Running) {
			continue
		}
		if out[rec.Pod] == nil {
			out[rec.Pod] = map[string]stepRecord{}
		}
		if _, seen := out[rec.Pod][rec.Msg]; !seen {
			r := stepRecord{end: rec.Time}
			if rec.Took != nil {
				r.took = time.Duration(*rec.Took * float64(time.Second))
			}
			out[rec.Pod][rec.Msg] = r
		}
	}
	return out, sc.Err()
}

// traceRows are the offsets from start of every pod's steps, by step:
// [begin, end, took] per pod that has the step.
type traceRows map[string][][3]time.Duration

const (
	traceCreated = "created (API, bench)"
	traceRunning = "seen Running (watch, bench)"
)

// add adds the pods of one startAll to the rows.
func (t traceRows) add(start time.Time, pods map[string]podTimes, steps map[string]map[string]stepRecord) {
	for name, pt := range pods {
		t[traceCreated] = append(t[traceCreated], [3]time.Duration{0, pt.created.Sub(start), pt.created.Sub(start)})
		for _, s := range traceSteps {
			r, ok := steps[ns+"/"+name][s]
			if !ok {
				continue
			}
			end := r.end.Sub(start)
			t[s] = append(t[s], [3]time.Duration{end - r.took, end, r.took})
		}
		t[traceRunning] = append(t[traceRunning], [3]time.Duration{0, pt.running.Sub(start), pt.running.Sub(pt.created)})
	}
}

// print prints, per step, the median begin and end over the pods, the
// last end, and the median and longest duration, in milliseconds (for
// the create: the API call; for Running: from the create's return).
func (t traceRows) print(title string) {
	fmt.Printf("\n%s (ms from the first create; over the pods):\n", title)
	fmt.Printf("  %-30s %5s %10s %10s %10s %10s %10s\n", "step", "pods", "begin p50", "end p50", "end max", "took p50", "took max")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }
	for _, s := range append(append([]string{traceCreated}, traceSteps...), traceRunning) {
		rows := t[s]
		if len(rows) == 0 {
			continue
		}
		col := func(i int) []time.Duration {
			v := make([]time.Duration, len(rows))
			for j, r := range rows {
				v[j] = r[i]
			}
			sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
			return v
		}
		begin, end, took := col(0), col(1), col(2)
		p50 := func(v []time.Duration) time.Duration { return v[len(v)/2] }
		b := ms(p50(begin))
		if s == traceCreated || s == traceRunning {
			b = "-"
		}
		fmt.Printf("  %-30s %5d %10s %10s %10s %10s %10s\n", s, len(rows), b, ms(p50(end)), ms(end[len(end)-1]), ms(p50(took)), ms(took[len(took)-1]))
	}
}

// logSize is the kubelet log's size now: the offset its next records
// start at.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
