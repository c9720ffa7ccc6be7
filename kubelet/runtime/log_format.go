package runtime

import (
	"bytes"
	"io"
	"time"
)

// LogFormat is how a runtime writes a container's log file.
type LogFormat string

const (
	// LogFormatRaw: the container's output as it is, stdout and stderr
	// interleaved (the native containerd backend).
	LogFormatRaw LogFormat = ""
	// LogFormatCRI: the CRI log format, one entry per line:
	//
	//	2016-10-06T00:17:09.669794202Z stdout F the line's text
	//
	// the time the runtime read it (RFC 3339 with nanoseconds), the
	// stream, and a tag: F for a full line, P for a part of a longer one
	// (the runtime splits lines over its maximum, containerd's
	// max_container_log_line_size); the text of P entries continues in
	// the next entry of that stream.
	LogFormatCRI LogFormat = "cri"
)

// criDecoder turns CRI log entries written to it into the text the
// container wrote, each line prefixed with its time (RFC3339Nano and a
// space) if timestamps is set. The parts of a line the runtime split (P
// entries) are held per stream until the line's last part (F), so a line
// of the other stream written meanwhile does not cut it; a part-line
// longer than maxPartial goes out unfinished, and Flush writes what is
// held. Lines the format does not describe are passed on as they are.
// Input may arrive split anywhere; an incomplete entry waits for its end.
type criDecoder struct {
	w          io.Writer
	timestamps bool
	// since drops the lines whose (first part's) time is before it.
	since   time.Time
	pending []byte
	partial map[string]*partLine
}

// partLine is a line in parts: its text so far, the time of its first
// part, and whether some of it went out already (no second time prefix).
type partLine struct {
	ts      time.Time
	text    []byte
	started bool
}

// maxPartial bounds the text held for one unfinished line.
const maxPartial = 1 << 20

func (d *criDecoder) Write(p []byte) (int, error) {
	d.pending = append(d.pending, p...)
	for {
		i := bytes.IndexByte(d.pending, '\n')
		if i < 0 {
			break
		}
		if err := d.entry(d.pending[:i]); err != nil {
			return len(p), err
		}
		d.pending = d.pending[i+1:]
	}
	if len(d.pending) == 0 {
		d.pending = nil // let a long entry's buffer go
	}
	return len(p), nil
}

// entry writes one entry's line, or holds a part of one.
func (d *criDecoder) entry(line []byte) error {
	ts, stream, text, full, ok := parseCRI(line)
	if !ok {
		_, err := d.w.Write(append(append([]byte(nil), line...), '\n'))
		return err
	}
	pl := d.partial[stream]
	if !full {
		if pl == nil {
			if d.partial == nil {
				d.partial = map[string]*partLine{}
			}
			pl = &partLine{ts: ts}
			d.partial[stream] = pl
		}
		pl.text = append(pl.text, text...)
		if len(pl.text) < maxPartial {
			return nil
		}
		err := d.emit(pl.ts, pl.started, pl.text, false)
		pl.text, pl.started = nil, true
		return err
	}
	if pl == nil {
		return d.emit(ts, false, text, true)
	}
	delete(d.partial, stream)
	return d.emit(pl.ts, pl.started, append(pl.text, text...), true)
}

func (d *criDecoder) emit(ts time.Time, continued bool, text []byte, newline bool) error {
	if ts.Before(d.since) {
		return nil
	}
	var out []byte
	if d.timestamps && !continued {
		out = append(ts.UTC().AppendFormat(out, time.RFC3339Nano), ' ')
	}
	out = append(out, text...)
	if newline {
		out = append(out, '\n')
	}
	_, err := d.w.Write(out)
	return err
}

// Flush writes the lines still in parts (a container that ended without
// a newline, or one still writing), stdout's first.
func (d *criDecoder) Flush() error {
	for _, stream := range []string{"stdout", "stderr"} {
		if pl := d.partial[stream]; pl != nil {
			delete(d.partial, stream)
			if err := d.emit(pl.ts, pl.started, pl.text, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseCRILogLine splits one CRI log entry (without its newline) into its
// time, text and whether it ends a line (tag F, not P). ok is false for a
// line that is not a CRI entry.
func ParseCRILogLine(line []byte) (ts time.Time, text []byte, full, ok bool) {
	ts, _, text, full, ok = parseCRI(line)
	return ts, text, full, ok
}

func parseCRI(line []byte) (ts time.Time, stream string, text []byte, full, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return ts, "", nil, false, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(line[:sp]))
	if err != nil {
		return ts, "", nil, false, false
	}
	rest := line[sp+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("stdout ")):
		stream = "stdout"
	case bytes.HasPrefix(rest, []byte("stderr ")):
		stream = "stderr"
	default:
		return ts, "", nil, false, false
	}
	tag, text, _ := bytes.Cut(rest[len("stdout "):], []byte(" "))
	switch {
	case len(tag) == 0:
		return ts, "", nil, false, false
	case tag[0] == 'F':
		return ts, stream, text, true, true
	case tag[0] == 'P':
		return ts, stream, text, false, true
	}
	return ts, "", nil, false, false
}
