package pod

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestStepLog: at debug level a pod's start is logged step by step, each
// record naming the pod and how long the step took (what
// hack/bench/kubelet -trace reads); at info level there are none.
func TestStepLog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		e := newTestEnv(t)
		e.src.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"color": "blue"}}
		var buf bytes.Buffer
		e.m.cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
		w := e.worker(configPod("web"))
		e.sync(w)
		if w.status.Phase != PhaseRunning {
			t.Fatalf("phase %s", w.status.Phase)
		}
		steps := map[string]bool{}
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var rec struct {
				Msg  string   `json:"msg"`
				Pod  string   `json:"pod"`
				Took *float64 `json:"took"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if rec.Pod != "default/web" {
				t.Errorf("record without the pod: %s", line)
			}
			if rec.Msg != "pod accepted" && (rec.Took == nil || *rec.Took < 0) {
				t.Errorf("record without took: %s", line)
			}
			steps[rec.Msg] = true
		}
		want := []string{"pod accepted", "volumes prepared", "sandbox made", "pod network ready", "image ready", "container created", "container started"}
		if level == slog.LevelInfo {
			want = nil
		}
		for _, s := range want {
			if !steps[s] {
				t.Errorf("level %s: no %q record in\n%s", level, s, buf.String())
			}
		}
		if len(steps) != len(want) {
			t.Errorf("level %s: steps %v, want %v", level, steps, want)
		}
	}
}
