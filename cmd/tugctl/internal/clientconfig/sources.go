package clientconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Sources are the files the configuration is read from, first of:
//
//	--kubeconfig PATH      one file, which must exist
//	--config PATH          one file, which must exist
//	$TUGBOAT_CONFIG        one file, which must exist
//	$KUBECONFIG            a list (':'-separated), merged as kubectl merges
//	                       them; missing files are skipped, as kubectl does
//	~/.tugboat/config      optional
//	~/.kube/config         optional, when ~/.tugboat/config is missing
//
// Each file is in tugctl's own form (see ConfigFile) or a standard
// kubeconfig (apiVersion v1, kind Config), told apart by its content;
// the files of a $KUBECONFIG list must be kubeconfigs.
type Sources struct {
	// Files in precedence order (first wins); one file but for
	// $KUBECONFIG.
	Files []string
	// From says where they came from: "--kubeconfig", "--config",
	// "TUGBOAT_CONFIG", "KUBECONFIG" or "default".
	From string
	// Required is set when the file was named: it must exist.
	Required bool
}

// FindSources picks the files to read (see Sources).
func FindSources(f Flags, getenv func(string) string) (Sources, error) {
	switch {
	case f.Kubeconfig != "" && f.ConfigPath != "":
		return Sources{}, fmt.Errorf("--kubeconfig and --config: give one of them")
	case f.Kubeconfig != "":
		return Sources{Files: []string{f.Kubeconfig}, From: "--kubeconfig", Required: true}, nil
	case f.ConfigPath != "":
		return Sources{Files: []string{f.ConfigPath}, From: "--config", Required: true}, nil
	case getenv("TUGBOAT_CONFIG") != "":
		return Sources{Files: []string{getenv("TUGBOAT_CONFIG")}, From: "TUGBOAT_CONFIG", Required: true}, nil
	case strings.TrimSpace(getenv("KUBECONFIG")) != "":
		var files []string
		for _, p := range filepath.SplitList(getenv("KUBECONFIG")) {
			if p = strings.TrimSpace(p); p != "" && !contains(files, p) {
				files = append(files, p)
			}
		}
		return Sources{Files: files, From: "KUBECONFIG"}, nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return Sources{}, fmt.Errorf("config file: no home directory (set --config, --kubeconfig or TUGBOAT_CONFIG): %v", err)
		}
		home = h
	}
	own := filepath.Join(home, ".tugboat", "config")
	if _, err := os.Stat(own); errors.Is(err, fs.ErrNotExist) {
		kube := filepath.Join(home, ".kube", "config")
		if fi, err := os.Stat(kube); err == nil && fi.Size() > 0 {
			return Sources{Files: []string{kube}, From: "default"}, nil
		}
	}
	return Sources{Files: []string{own}, From: "default"}, nil
}

// Path is the file that edits go to (tugctl config set-*): the named
// file, else the first of a $KUBECONFIG list that exists (else its
// first), else the default file.
func (s Sources) Path() string {
	for _, f := range s.Files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	if len(s.Files) == 0 {
		return ""
	}
	return s.Files[0]
}

// Describe names the files for messages: one path, or "the KUBECONFIG
// files a, b".
func (s Sources) Describe() string {
	if len(s.Files) == 1 {
		return s.Files[0]
	}
	return "the KUBECONFIG files " + strings.Join(s.Files, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
