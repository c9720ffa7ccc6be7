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
// space) if timestamps is set. Lines the format does not describe are
// passed on as they are. Input may arrive split anywhere; a trailing
// incomplete entry waits for its end.
type criDecoder struct {
	w          io.Writer
	timestamps bool
	pending    []byte
	// partial is set while a P entry's line continues.
	partial bool
}

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

// entry writes one entry's text.
func (d *criDecoder) entry(line []byte) error {
	ts, text, full, ok := ParseCRILogLine(line)
	var out []byte
	switch {
	case !ok:
		out = append(append(out, line...), '\n')
	default:
		if d.timestamps && !d.partial {
			out = append(ts.UTC().AppendFormat(out, time.RFC3339Nano), ' ')
		}
		out = append(out, text...)
		if full {
			out = append(out, '\n')
		}
		d.partial = !full
	}
	_, err := d.w.Write(out)
	return err
}

// ParseCRILogLine splits one CRI log entry (without its newline) into its
// time, text and whether it ends a line (tag F, not P). ok is false for a
// line that is not a CRI entry.
func ParseCRILogLine(line []byte) (ts time.Time, text []byte, full, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return ts, nil, false, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(line[:sp]))
	if err != nil {
		return ts, nil, false, false
	}
	rest := line[sp+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("stdout ")), bytes.HasPrefix(rest, []byte("stderr ")):
		rest = rest[len("stdout "):]
	default:
		return ts, nil, false, false
	}
	tag, text, _ := bytes.Cut(rest, []byte(" "))
	switch {
	case len(tag) == 0:
		return ts, nil, false, false
	case tag[0] == 'F':
		return ts, text, true, true
	case tag[0] == 'P':
		return ts, text, false, true
	}
	return ts, nil, false, false
}
