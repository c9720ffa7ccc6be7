package tugctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveSettings(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, "config", "")
	cfgDir := filepath.Join(home, ".tugboat")
	if err := mkdir(cfgDir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgDir, "config", "server: file:1\nnamespace: team\ncaFile: ca.crt\n")
	other := writeFile(t, home, "other.yaml", "server: other:1\n")
	tests := []struct {
		name          string
		flags         globalFlags
		env           map[string]string
		server, from  string
		namespace, ca string
		err           string
	}{
		{name: "config file", env: map[string]string{"HOME": home}, server: "file:1", from: filepath.Join(cfgDir, "config"), namespace: "team", ca: filepath.Join(cfgDir, "ca.crt")},
		{name: "env beats file", env: map[string]string{"HOME": home, "TUGBOAT_SERVER": "env:1"}, server: "env:1", from: "TUGBOAT_SERVER", namespace: "team", ca: filepath.Join(cfgDir, "ca.crt")},
		{name: "flag beats env", flags: globalFlags{server: "flag:1", namespace: "mine", caFile: "/x/ca"}, env: map[string]string{"HOME": home, "TUGBOAT_SERVER": "env:1"}, server: "flag:1", from: "--server", namespace: "mine", ca: "/x/ca"},
		{name: "no file: defaults", env: map[string]string{"HOME": t.TempDir()}, server: DefaultServer, from: "default", namespace: "default"},
		{name: "TUGBOAT_CONFIG", env: map[string]string{"HOME": home, "TUGBOAT_CONFIG": other}, server: "other:1", from: other, namespace: "default"},
		{name: "--config", flags: globalFlags{configPath: other}, env: map[string]string{"HOME": home}, server: "other:1", from: other, namespace: "default"},
		{name: "a named config file must exist", flags: globalFlags{configPath: filepath.Join(home, "nope")}, env: map[string]string{"HOME": home}, err: "no such file"},
		{name: "unknown field in the config file", flags: globalFlags{configPath: writeFile(t, home, "bad.yaml", "sever: x\n")}, env: map[string]string{"HOME": home}, err: `bad.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "sever"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolveSettings(tc.flags, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Server != tc.server || s.ServerFrom != tc.from || s.Namespace != tc.namespace || s.CAFile != tc.ca {
				t.Errorf("settings = %+v", s)
			}
		})
	}
}

func TestVersionClientOnly(t *testing.T) {
	var out, errOut bytes.Buffer
	o := &Options{Streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Version: "v1.2.3", Getenv: func(string) string { return "" }}
	if code := o.Execute(context.Background(), []string{"version", "--client"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "Client Version: v1.2.3 (") {
		t.Errorf("version printed %q", out.String())
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"get", "pods", "--frob"}} {
		var out, errOut bytes.Buffer
		o := &Options{Streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }}
		if code := o.Execute(context.Background(), args); code == 0 || !strings.HasPrefix(errOut.String(), "error: unknown") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

func mkdir(p string) error { return os.MkdirAll(p, 0o755) }
