package runtime

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseCRILogLine(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	tests := []struct {
		line string
		text string
		full bool
		ok   bool
	}{
		{line: "2016-10-06T00:17:09.669794202Z stdout F hello world", text: "hello world", full: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stderr P part", text: "part", ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout F ", text: "", full: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout F", text: "", full: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout F  two spaces", text: " two spaces", full: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdin F x"},
		{line: "not a time stdout F x"},
		{line: "2016-10-06T00:17:09.669794202Z stdout X x"},
		{line: "plain output"},
		{line: ""},
	}
	for _, tc := range tests {
		gotTS, text, full, ok := ParseCRILogLine([]byte(tc.line))
		if ok != tc.ok || string(text) != tc.text || full != tc.full || ok && !gotTS.Equal(ts) {
			t.Errorf("%q: got %v %q full=%v ok=%v", tc.line, gotTS, text, full, ok)
		}
	}
}

func TestCRIDecoder(t *testing.T) {
	const log = "2024-01-01T00:00:01.5Z stdout F one\n" +
		"2024-01-01T00:00:02Z stderr P long \n" +
		"2024-01-01T00:00:03Z stderr P line \n" +
		"2024-01-01T00:00:03.5Z stdout F cut in\n" +
		"2024-01-01T00:00:04Z stderr F ends\n" +
		"garbage line\n" +
		"2024-01-01T00:00:05Z stdout F last\n" +
		"2024-01-01T00:00:06Z stdout P no newline"
	tests := []struct {
		timestamps bool
		want       string
	}{
		{false, "one\ncut in\nlong line ends\ngarbage line\nlast\n"},
		{true, "2024-01-01T00:00:01.5Z one\n2024-01-01T00:00:03.5Z cut in\n2024-01-01T00:00:02Z long line ends\ngarbage line\n2024-01-01T00:00:05Z last\n"},
	}
	for _, tc := range tests {
		// Byte by byte: entries split anywhere come out whole.
		var out bytes.Buffer
		d := &criDecoder{w: &out, timestamps: tc.timestamps}
		for i := 0; i < len(log); i++ {
			if _, err := d.Write([]byte{log[i]}); err != nil {
				t.Fatal(err)
			}
		}
		if out.String() != tc.want {
			t.Errorf("timestamps=%v:\n got %q\nwant %q", tc.timestamps, out.String(), tc.want)
		}
		// The unterminated entry ("no newline") is not an entry yet.
		if _, err := d.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(out.String(), "no newline") {
			t.Errorf("flush: %q does not end with the held part", out.String())
		}
	}
}

// TestReadLogCRI reads a CRI log with tail, limit and timestamps, and
// refuses timestamps on a raw log.
func TestReadLogCRI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, "2024-01-01T00:00:01Z stdout F a\n2024-01-01T00:00:02Z stdout F b\n2024-01-01T00:00:03Z stderr F c\n")
	for _, tc := range []struct {
		opts LogOptions
		want string
	}{
		{LogOptions{Format: LogFormatCRI}, "a\nb\nc\n"},
		{LogOptions{Format: LogFormatCRI, TailLines: 2, Timestamps: true}, "2024-01-01T00:00:02Z b\n2024-01-01T00:00:03Z c\n"},
		{LogOptions{Format: LogFormatCRI, LimitBytes: 3}, "a\nb"},
		{LogOptions{Format: LogFormatCRI, Since: time.Date(2024, 1, 1, 0, 0, 2, 0, time.UTC)}, "b\nc\n"},
		{LogOptions{Format: LogFormatCRI, Since: time.Date(2024, 1, 1, 0, 0, 2, 1, time.UTC), Timestamps: true}, "2024-01-01T00:00:03Z c\n"},
	} {
		var b bytes.Buffer
		if err := ReadLog(context.Background(), path, tc.opts, &b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.opts, b.String(), tc.want)
		}
	}
	if err := ReadLog(context.Background(), path, LogOptions{Timestamps: true}, &bytes.Buffer{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("timestamps on a raw log: %v, want ErrInvalid", err)
	}
	if err := ReadLog(context.Background(), path, LogOptions{Since: time.Now()}, &bytes.Buffer{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("since on a raw log: %v, want ErrInvalid", err)
	}
}

// FuzzCRIDecoder: any input is decoded without panicking, and a stream of
// well-formed entries of arbitrary text comes out as that text.
func FuzzCRIDecoder(f *testing.F) {
	f.Add("2024-01-01T00:00:01Z stdout F a\n", "hello", true)
	f.Add("x\ny\n", "part", false)
	f.Fuzz(func(t *testing.T, raw, text string, full bool) {
		var out bytes.Buffer
		d := &criDecoder{w: &out}
		_, _ = d.Write([]byte(raw))
		if strings.ContainsAny(text, "\n") {
			return
		}
		out.Reset()
		d = &criDecoder{w: &out}
		tag := "P"
		if full {
			tag = "F"
		}
		_, _ = d.Write([]byte("2024-01-01T00:00:01Z stdout " + tag + " " + text + "\n"))
		_ = d.Flush()
		want := text
		if full {
			want += "\n"
		}
		if out.String() != want {
			t.Errorf("%q: decoded %q, want %q", text, out.String(), want)
		}
	})
}
